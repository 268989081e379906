package e2e

// The benchmarks print figures and never assert a time. Run them with
// `make bench`, which also writes docs/benchmarks.md from their records
// (see bench/); `go test -run '^$' -bench . -benchtime 1x ./test/e2e/` runs
// them alone, reporting their metrics only.

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gomomento/valkey-operator/bench/record"
)

// benchRuns numbers namespaces: the testing package may call a benchmark
// function more than once while it settles on b.N.
var benchRuns atomic.Int32

func benchNamespace(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, benchRuns.Add(1))
}

// saveRecord writes a record for the report when $VALKEY_BENCH_OUT is set.
func saveRecord(b *testing.B, name string, f record.File) {
	b.Helper()
	if err := record.Save(name, f); err != nil {
		b.Fatalf("saving record %s: %v", name, err)
	}
}

// envInt reads a positive count from the environment, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// metricSum adds up every series of a counter in the operator's registry
// whose labels include labels; the operator runs in this process.
func metricSum(name string, labels map[string]string) float64 {
	total := 0.0
	for _, v := range metricSamples(name, labels) {
		total += v
	}
	return total
}

// reconcileCounter reads how many reconciles the in-process operator has
// run: the cluster controller's and all controllers'.
func reconcileCounter() (cluster, all int) {
	return int(metricSum("controller_runtime_reconcile_total", map[string]string{"controller": "valkeycluster"})),
		int(metricSum("controller_runtime_reconcile_total", nil))
}
