package topology

import "testing"

// While the TLS Secret is invalid, healing goes ahead and changes wait.
func TestHeldForTLS(t *testing.T) {
	lostPrimary := func() []Member {
		ms := formed2()
		kill(ms, "n1", false)
		return ms
	}
	lostReplica := func() []Member {
		ms := formed2()
		kill(ms, "n3", false)
		return ms
	}
	tests := []struct {
		name    string
		members func() []Member
		shards  int
		want    string
	}{
		{"a takeover over a lost primary goes ahead", lostPrimary, 2,
			"Failover node=n3 mode=takeover (" + ReasonTakeover + ": n3 replaces n1)"},
		{"a lost replica is forgotten and replaced", lostReplica, 2,
			"Forget id=id-n3 on=[n1 n2 n4] (forgetting departed node: n3)"},
		{"a new shard waits", formed2, 3,
			"Wait (" + ReasonHeldForTLS + ": CreateNode (adding shard))"},
		{"done is kept as it is", formed2, 2, "Done (cluster converged)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: tt.shards, ReplicasPerShard: 1, Members: tt.members(), HoldForTLS: true})
			if w.String() != tt.want {
				t.Fatalf("got  %s\nwant %s", w, tt.want)
			}
			if w.Lead().Reason == ReasonHeldForTLS && w.Lead().Cause != CauseHeldForTLS {
				t.Fatalf("held with cause %v", w.Lead().Cause)
			}
			if h, ok := w.HeldBy(CauseHeldForTLS); ok != (w.Lead().Cause == CauseHeldForTLS) || (ok && h != w.Lead()) {
				t.Fatalf("holds %v for the wave %s", w.Held, w)
			}
		})
	}
}
