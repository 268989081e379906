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
		{"one stopping primary at a time: two elections in one epoch split the votes",
			func(ms []Member) { stopping(ms, "n1"); stopping(ms, "n3") },
			handOver("n4", "n1")},
		{"the next waits while the first hand-over flips roles",
			func(ms []Member) {
				stopping(ms, "n1")
				stopping(ms, "n3")
				member(ms, "n4").FailoverRequested = now.Add(-time.Second)
			},
			"Wait (" + ReasonFailoverInFlight + ": n4 takes over from n1)"},
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
		{"a hand-over whose primary exited is no longer in flight: its replica takes over at once",
			func(ms []Member) {
				stopping(ms, "n1")
				member(ms, "n1").Pod = Pod{Phase: PodGone, Exited: true}
				member(ms, "n4").FailoverRequested = now.Add(-time.Second)
			},
			"Failover node=n4 mode=force (" + ReasonProcessExited + ": n4 replaces n1)"},
		{"a forced promotion is not asked twice while it flips roles",
			func(ms []Member) {
				stopping(ms, "n1")
				member(ms, "n1").Pod = Pod{Phase: PodGone, Exited: true}
				member(ms, "n4").FailoverRequested = now.Add(-time.Second)
				member(ms, "n4").FailoverRequestedMode = FailoverForce
			},
			"Wait (" + ReasonFailoverInFlight + ": n4 replaces n1)"},
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

// A replica that kept MIGRATING or IMPORTING state its primary does not
// hold gets it cleared by SETSLOT STABLE on the primary, whichever end owns
// the slots keeping them.
func TestReplicaSlotStateIsCleared(t *testing.T) {
	tests := []struct {
		name  string
		setup func(ms []Member)
		want  string
	}{
		{"a source's replica still migrating slots the target owns",
			func(ms []Member) {
				member(ms, "n4").View.Migrating = map[int]string{5000: id("n2"), 5001: id("n2")}
				for _, name := range []string{"n1", "n2", "n3", "n5", "n6"} {
					v := member(ms, name).View
					for i := range v.Peers {
						switch v.Peers[i].ID {
						case id("n1"):
							v.Peers[i].Slots = []SlotRange{{Start: 0, End: 4999}, {Start: 5002, End: 5461}}
						case id("n2"):
							v.Peers[i].Slots = []SlotRange{{Start: 5000, End: 5001}, {Start: 5462, End: 10922}}
						}
					}
				}
				member(ms, "n1").View.Slots = []SlotRange{{Start: 0, End: 4999}, {Start: 5002, End: 5461}}
				member(ms, "n2").View.Slots = []SlotRange{{Start: 5000, End: 5001}, {Start: 5462, End: 10922}}
			},
			"ClearSlotStates node=n1 slots=5000-5001 (" + ReasonReplicaSlotState + ": n4: slots 5000-5001, by SETSLOT STABLE on its primary n1)"},
		{"an aborted move: the source still owns the slot and keeps it",
			func(ms []Member) { member(ms, "n4").View.Migrating = map[int]string{100: id("n2")} },
			"ClearSlotStates node=n1 slots=100 (" + ReasonReplicaSlotState + ": n4: slots 100, by SETSLOT STABLE on its primary n1)"},
		{"a target's replica still importing",
			func(ms []Member) { member(ms, "n5").View.Importing = map[int]string{6000: id("n1")} },
			"ClearSlotStates node=n2 slots=6000 (" + ReasonReplicaSlotState + ": n5: slots 6000, by SETSLOT STABLE on its primary n2)"},
		// The operator killed while n2 waited for n5 to acknowledge a
		// replicated SETSLOT IMPORTING: n5 ran it, n2 never did. Telling
		// n2 the owner (n1) again would not clear it: a replica drops
		// IMPORTING only when the owner named is its own primary.
		{"a target's replica importing a move its primary never started",
			func(ms []Member) { member(ms, "n5").View.Importing = map[int]string{100: id("n1"), 101: id("n1")} },
			"ClearSlotStates node=n2 slots=100-101 (" + ReasonReplicaSlotState + ": n5: slots 100-101, by SETSLOT STABLE on its primary n2)"},
		{"both states on one replica are cleared at once",
			func(ms []Member) {
				member(ms, "n4").View.Migrating = map[int]string{100: id("n2")}
				member(ms, "n4").View.Importing = map[int]string{6000: id("n2")}
			},
			"ClearSlotStates node=n1 slots=100,6000 (" + ReasonReplicaSlotState + ": n4: slots 100,6000, by SETSLOT STABLE on its primary n1)"},
		{"the primary still has the state: its move is resumed, not the replica's",
			func(ms []Member) {
				member(ms, "n1").View.Migrating = map[int]string{100: id("n2")}
				member(ms, "n4").View.Migrating = map[int]string{100: id("n2")}
			},
			"MigrateSlots n1->n2 slots=100 method=classic (resuming interrupted slot migration: n1 -> n2 slots 100 by SETSLOT and MIGRATE)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := formed3()
			tt.setup(ms)
			got := Plan(Input{Shards: 3, ReplicasPerShard: 1, Members: ms})
			if got.String() != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A drained Kubernetes node held both primaries of a 2-shard cluster: the
// first hand-over completed, the second primary's process exited before
// its own did. With one primary left there is no majority to vote, so its
// replica takes over at once rather than after the hand-over's grace.
func TestExitedHandOverEscalatesWithoutQuorum(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := formed2()
	stopping(ms, "n2")
	member(ms, "n2").Pod = Pod{Phase: PodGone, Exited: true}
	member(ms, "n4").FailoverRequested = now.Add(-2 * time.Second)
	got := Plan(Input{Shards: 2, ReplicasPerShard: 1, Members: ms, Now: now})
	want := "Failover node=n4 mode=takeover (" + ReasonTakeover + ": n4 replaces n2)"
	if got.String() != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	member(ms, "n4").FailoverRequestedMode = FailoverTakeover
	if got := Plan(Input{Shards: 2, ReplicasPerShard: 1, Members: ms, Now: now}); got.Acts() {
		t.Fatalf("the takeover is asked again while it flips roles: %s", got)
	}
}
