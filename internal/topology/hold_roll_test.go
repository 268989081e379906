package topology

import "testing"

// A roll held by a fleet rollout waits with the hold's message; healing
// and a scale-out go ahead, and a cluster that owes no roll is not held.
func TestHoldRoll(t *testing.T) {
	const hold = "ValkeyConfig std: waiting for rollout slot (1 of 1 in use: ns/a)"
	outdated := func() []Member {
		ms := formed2()
		for i := range ms {
			ms[i].Outdated = true
		}
		return ms
	}
	lostReplica := func() []Member {
		ms := outdated()
		kill(ms, "n3", false)
		return ms
	}
	tests := []struct {
		name    string
		members func() []Member
		shards  int
		want    string
	}{
		{"an owed roll waits", outdated, 2, "Wait (" + hold + ")"},
		{"a lost replica is still forgotten", lostReplica, 2,
			"Forget id=id-n3 on=[n1 n2 n4] (forgetting departed node: n3)"},
		{"a scale-out still adds its shard", outdated, 3, "CreateNode shard=2 join=\"shard\" (adding shard: shard 2); CreateNode shard=2 join=\"shard\" (adding shard: shard 2)"},
		{"nothing outdated: no hold", formed2, 2, "Done (cluster converged)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: tt.shards, ReplicasPerShard: 1, Members: tt.members(), HoldRoll: hold})
			if w.String() != tt.want {
				t.Fatalf("got  %s\nwant %s", w, tt.want)
			}
			if w.Lead().Reason == hold && w.Lead().Cause != CauseRolloutWaiting {
				t.Fatalf("held with cause %v", w.Lead().Cause)
			}
		})
	}
}
