package valkey

import (
	"context"
	"testing"

	"github.com/valkey-io/valkey-go"
)

// The controllers tell a node that answered and refused from one that did
// not answer, and a refusal for missing rights from any other; these are
// the replies of a real server.
func TestErrorClassification(t *testing.T) {
	s := startServer(t, valkeyArgv(t), "port")
	n := dialT(t, s.operatorTarget())
	ctx := testCtx(t)
	unknown := n.do(ctx, func(b valkey.Builder) valkey.Completed { return b.Arbitrary("NOSUCHCOMMAND").Build() }).Error()
	_, noPerm := n.ConfigGet(ctx, "maxmemory")
	_, unreachable := Dial(context.Background(), Target{Address: "127.0.0.1:1"})
	for _, tc := range []struct {
		name               string
		err                error
		server, permission bool
	}{
		{"an unknown command", unknown, true, false},
		{"a command the user may not run", noPerm, true, true},
		{"no answer", unreachable, false, false},
	} {
		if tc.err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if got := IsServerError(tc.err); got != tc.server {
			t.Errorf("%s (%v): IsServerError = %v, want %v", tc.name, tc.err, got, tc.server)
		}
		if got := IsNoPermission(tc.err); got != tc.permission {
			t.Errorf("%s (%v): IsNoPermission = %v, want %v", tc.name, tc.err, got, tc.permission)
		}
	}
}
