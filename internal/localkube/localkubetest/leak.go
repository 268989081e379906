// Package localkubetest holds what tests of the local runtime, its own and
// the end-to-end suite's, assert about it. It does not import localkube, so
// localkube's in-package tests can use it too.
package localkubetest

import (
	"strings"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/localkube/procscan"
)

// AssertNoLeakedProcesses fails t if any process under prefix is still alive
// a few seconds from now (killed processes take a moment to be reaped).
func AssertNoLeakedProcesses(t testing.TB, prefix string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		leaked, err := procscan.Under(prefix)
		if err != nil {
			t.Errorf("listing processes: %v", err)
			return
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, p := range leaked {
				b.WriteString("\n  " + p.String())
			}
			t.Errorf("%d process(es) under %s leaked:%s", len(leaked), prefix, b.String())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
