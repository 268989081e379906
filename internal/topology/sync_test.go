package topology

import "testing"

// A replica's place in the shape is not the same as holding the data: the
// planner does not report convergence while one is still loading.
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Plan(Input{Shards: 3, ReplicasPerShard: 1, Members: tt.members()})
			if a.String() != tt.want {
				t.Fatalf("got  %s\nwant %s", a, tt.want)
			}
		})
	}
}
