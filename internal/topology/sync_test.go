package topology

import "testing"

// A replica's place in the shape is not the same as holding the data: the
// planner does not report convergence while one is still loading, and does
// not promote a replica over a primary whose process is still stopping.
func TestReplicaSyncGuards(t *testing.T) {
	tests := []struct {
		name    string
		members func() []Member
		want    string
	}{
		{"a replica still loading holds convergence back", func() []Member {
			ms := formed3()
			member(ms, "n5").View.SyncDone = false
			return ms
		}, "Wait (" + ReasonReplicaSyncing + ": n5)"},
		{"a replica whose link is down holds convergence back", func() []Member {
			ms := formed3()
			member(ms, "n6").View.LinkUp = false
			return ms
		}, "Wait (" + ReasonReplicaSyncing + ": n6)"},
		{"no takeover while the lost primary's process still runs: a hand-over it takes part in", func() []Member {
			ms := formed2()
			member(ms, "n1").Pod.Phase, member(ms, "n1").View = PodStopping, nil
			return ms
		}, "Failover node=n3 mode=default (" + ReasonHandOver + ": n3 takes over from n1)"},
		{"takeover once it has exited", func() []Member {
			ms := formed2()
			kill(ms, "n1", false)
			return ms
		}, "Failover node=n3 mode=takeover (" + ReasonTakeover + ": n3 replaces n1)"},
		{"a stopping replica is a degraded shard, not a converged one", func() []Member {
			ms := formed3()
			member(ms, "n5").Pod.Phase, member(ms, "n5").View = PodStopping, nil
			return ms
		}, "Wait (" + ReasonPodStopping + ": n5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := tt.members()
			a := Plan(Input{Shards: len(ms) / 2, ReplicasPerShard: 1, Members: ms})
			if a.String() != tt.want {
				t.Fatalf("got  %s\nwant %s", a, tt.want)
			}
		})
	}
}

// formed2 is a converged 2x1 cluster: losing a primary loses the quorum.
func formed2() []Member {
	return mesh(
		nd{name: "n1", shard: 0, slots: rs(0, 8191)},
		nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
		nd{name: "n3", shard: 0, role: RoleReplica, primary: "n1"},
		nd{name: "n4", shard: 1, role: RoleReplica, primary: "n2"},
	)
}
