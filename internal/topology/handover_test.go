package topology

import (
	"testing"
	"time"
)

// stopping marks name's pod as being deleted: the process still serves but
// the operator no longer asks it, so only its peers' views speak for it.
func stopping(ms []Member, name string) {
	m := member(ms, name)
	m.Pod.Phase, m.View = PodStopping, nil
}

func TestStoppingPrimaryHandsOver(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	handOver := func(replica, primary string) string {
		return "Failover node=" + replica + " mode=default (" + ReasonHandOver + ": " + replica + " takes over from " + primary + ")"
	}
	tests := []struct {
		name  string
		setup func(ms []Member)
		want  string
	}{
		{"a stopping primary hands over to its synced replica",
			func(ms []Member) { stopping(ms, "n1") },
			handOver("n4", "n1")},
		{"every stopping primary in one wave",
			func(ms []Member) { stopping(ms, "n1"); stopping(ms, "n3") },
			handOver("n4", "n1") + "; " + handOver("n6", "n3")},
		{"never onto a replica still loading the primary's data",
			func(ms []Member) { stopping(ms, "n1"); member(ms, "n4").View.SyncDone = false },
			"Wait (" + ReasonPodStopping + ": n1)"},
		{"never onto a replica whose link is down",
			func(ms []Member) { stopping(ms, "n1"); member(ms, "n4").View.LinkUp = false },
			"Wait (" + ReasonPodStopping + ": n1)"},
		{"a primary its peers flag as failed is no hand-over: it is not serving",
			func(ms []Member) {
				stopping(ms, "n1")
				for i := range ms {
					if v := ms[i].View; v != nil {
						for j := range v.Peers {
							if v.Peers[j].ID == id("n1") {
								v.Peers[j].Fail = true
							}
						}
					}
				}
			},
			"Wait (" + ReasonWaitAutoFailover + ": n1)"},
		{"one request per primary: held while the first one flips roles",
			func(ms []Member) { stopping(ms, "n1"); member(ms, "n4").FailoverRequested = now.Add(-time.Second) },
			"Wait (" + ReasonFailoverInFlight + ": n4 takes over from n1)"},
		{"a stopping replica needs nothing from the planner yet",
			func(ms []Member) { stopping(ms, "n4") },
			"Wait (" + ReasonPodStopping + ": n4)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := formed3()
			tt.setup(ms)
			got := Plan(Input{Shards: 3, ReplicasPerShard: 1, Members: ms, Now: now})
			if got.String() != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
