package topology

import (
	"slices"
	"testing"
	"time"
)

// A classic migration whose other end died is resumed with the node that
// took over that end's shard, before the dead node is forgotten (which
// would clear the migration state and strand the keys already moved).
func TestInterruptedMigrationWithDeadEnd(t *testing.T) {
	// n1 (shard 0) was moving slot 5461 to n2 (shard 1), whose replica n5
	// has since been promoted.
	targetReplaced := func() []Member {
		ms := mesh(
			nd{name: "n1", shard: 0, slots: rs(0, 5461)},
			nd{name: "n2", shard: 1, phase: PodGone},
			nd{name: "n3", shard: 2, slots: rs(10923, 16383)},
			nd{name: "n4", shard: 0, role: RoleReplica, primary: "n1"},
			nd{name: "n5", shard: 1, slots: rs(5462, 10922)},
			nd{name: "n6", shard: 2, role: RoleReplica, primary: "n3"})
		member(ms, "n2").NodeID = id("n2")
		knowDead(ms, "n2")
		member(ms, "n1").View.Migrating = map[int]string{5461: id("n2")}
		return ms
	}
	// n2 (shard 1) was importing slot 5461 from n1, whose replica n4 has
	// since been promoted.
	sourceReplaced := func() []Member {
		ms := mesh(
			nd{name: "n1", shard: 0, phase: PodGone},
			nd{name: "n2", shard: 1, slots: rs(5462, 10922)},
			nd{name: "n3", shard: 2, slots: rs(10923, 16383)},
			nd{name: "n4", shard: 0, slots: rs(0, 5461)},
			nd{name: "n5", shard: 1, role: RoleReplica, primary: "n2"},
			nd{name: "n6", shard: 2, role: RoleReplica, primary: "n3"})
		member(ms, "n1").NodeID = id("n1")
		knowDead(ms, "n1")
		member(ms, "n2").View.Importing = map[int]string{5461: id("n1")}
		return ms
	}
	// A new shard's primary n7 died before its first slot arrived; its
	// replica n8 is alive.
	emptyTarget := func(withReplica bool) func() []Member {
		return func() []Member {
			nodes := []nd{
				{name: "n1", shard: 0, slots: rs(0, 8191)},
				{name: "n2", shard: 1, slots: rs(8192, 16383)},
				{name: "n7", shard: 2, phase: PodGone},
			}
			if withReplica {
				nodes = append(nodes, nd{name: "n8", shard: 2, role: RoleReplica, primary: "n7"})
			}
			ms := mesh(nodes...)
			member(ms, "n7").NodeID = id("n7")
			knowDead(ms, "n7")
			member(ms, "n1").View.Migrating = map[int]string{0: id("n7"), 1: id("n7"), 5: id("n7")}
			return ms
		}
	}
	tests := []struct {
		name    string
		shards  int
		members func() []Member
		want    string
	}{
		{"target died, its replica took over: resume into the replica", 3, targetReplaced,
			"MigrateSlots n1->n5 slots=5461 method=classic (resuming slot migration with the node that replaced n2: n1 -> n5 slots 5461 by SETSLOT and MIGRATE)"},
		{"source died, its replica took over: resume from the replica", 3, sourceReplaced,
			"MigrateSlots n4->n2 slots=5461 method=classic (resuming slot migration with the node that replaced n1: n4 -> n2 slots 5461 by SETSLOT and MIGRATE)"},
		{"slotless target died: Valkey will not promote its replica, the operator does", 3, emptyTarget(true),
			"Failover node=n8 mode=takeover (" + ReasonPromoteMigrationHeir + ": n8 replaces n7)"},
		{"slotless target died without a replica: nothing to resume, forget it", 3, emptyTarget(false),
			"Forget id=id-n7 on=[n1 n2] (forgetting departed node: n7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Plan(Input{Shards: tt.shards, ReplicasPerShard: 1, Members: tt.members()})
			if got := a.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// knowDead adds name, flagged failed, to every live view; its replicas'
// links are down.
func knowDead(ms []Member, name string) {
	for i := range ms {
		v := ms[i].View
		if v == nil {
			continue
		}
		v.Peers = append(v.Peers, Peer{ID: id(name), IP: ip(name), Role: RolePrimary, Fail: true})
		if v.PrimaryID == id(name) {
			v.LinkUp = false
		}
	}
}

func TestInterruptedMigrationWithDemotedEnd(t *testing.T) {
	// n1 (shard 0) was moving slot 7000 to n3 (shard 2), which has since
	// been demoted and replicates primary: with heir, its replica n6 won a
	// failover; without, it gave its only slot back and the shard is gone.
	targetDemoted := func(primary string, heir bool) []Member {
		nodes := []nd{
			{name: "n1", shard: 0, slots: rs(0, 8191)},
			{name: "n2", shard: 1, slots: rs(8192, 16383)},
			{name: "n3", shard: 2, role: RoleReplica, primary: primary},
			{name: "n4", shard: 0, role: RoleReplica, primary: "n1"},
			{name: "n5", shard: 1, role: RoleReplica, primary: "n2"},
		}
		if heir {
			nodes = append(nodes, nd{name: "n6", shard: 2, slots: rs(5000, 5000)})
		}
		ms := mesh(nodes...)
		member(ms, "n1").View.Migrating = map[int]string{7000: id("n3")}
		return ms
	}
	// n3 (shard 2) was importing slot 7000 from n1, which has since been
	// demoted: its replica n4 won a failover.
	sourceDemoted := func() []Member {
		ms := mesh(
			nd{name: "n1", shard: 0, role: RoleReplica, primary: "n4"},
			nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
			nd{name: "n3", shard: 2, slots: rs(5000, 5000)},
			nd{name: "n4", shard: 0, slots: append(rs(0, 4999), rs(5001, 8191)...)},
			nd{name: "n5", shard: 1, role: RoleReplica, primary: "n2"},
			nd{name: "n6", shard: 2, role: RoleReplica, primary: "n3"})
		member(ms, "n3").View.Importing = map[int]string{7000: id("n1")}
		return ms
	}
	// n7, the new shard's primary, is importing slot 7000 from n1; its
	// replica n3 holds the same state, replicated, and sorts first; n1
	// has not been told yet.
	replicatedState := func() []Member {
		ms := mesh(
			nd{name: "n1", shard: 0, slots: rs(0, 8191)},
			nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
			nd{name: "n3", shard: 2, role: RoleReplica, primary: "n7"},
			nd{name: "n4", shard: 0, role: RoleReplica, primary: "n1"},
			nd{name: "n5", shard: 1, role: RoleReplica, primary: "n2"},
			nd{name: "n7", shard: 2, slots: rs(5000, 5000)})
		member(ms, "n3").View.Importing = map[int]string{7000: id("n1")}
		member(ms, "n7").View.Importing = map[int]string{7000: id("n1")}
		return ms
	}
	tests := []struct {
		name    string
		members []Member
		want    string
	}{
		{"a replica's replicated slot state is not acted on", replicatedState(),
			"MigrateSlots n1->n7 slots=7000 method=classic (resuming interrupted slot migration: n1 -> n7 slots 7000 by SETSLOT and MIGRATE)"},
		{"target demoted: resume into its shard's new primary", targetDemoted("n6", true),
			"MigrateSlots n1->n6 slots=7000 method=classic (resuming interrupted slot migration: n1 -> n6 slots 7000 by SETSLOT and MIGRATE)"},
		{"source demoted: resume from its shard's new primary", sourceDemoted(),
			"MigrateSlots n4->n3 slots=7000 method=classic (resuming interrupted slot migration: n4 -> n3 slots 7000 by SETSLOT and MIGRATE)"},
		{"target replicates another shard: it is reattached first", targetDemoted("n1", true),
			"Replicate node=n3 primary=n6(id-n6) (attaching replica: n3 follows n6)"},
		{"target lost its shard and replicates the source: nothing to resume into", targetDemoted("n1", false),
			"Wait (" + ReasonMigrationPeerDemoted + ": n1 slots 7000: n3 replicates n1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Plan(Input{Shards: 3, ReplicasPerShard: 1, Members: tt.members})
			if got := a.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// Lowering the shard count while CLUSTER MIGRATESLOTS jobs feed the shard
// that goes away cancels them on every source at once, rather than
// finishing the move only to drain it back; a move into a shard that stays
// runs on.
func TestReversedAtomicMoveIsCancelled(t *testing.T) {
	// n1..n3 were giving shard 3 (n4, empty) a quarter of the slots.
	growing := func() []Member {
		ms := mesh(
			nd{name: "n1", shard: 0, slots: rs(0, 5460)},
			nd{name: "n2", shard: 1, slots: rs(5461, 10922)},
			nd{name: "n3", shard: 2, slots: rs(10923, 16383)},
			nd{name: "n4", shard: 3})
		for _, src := range []struct {
			name string
			from int
		}{{"n1", 4096}, {"n2", 9557}, {"n3", 15019}} {
			v := member(ms, src.name).View
			v.AtomicMigrationInFlight = true
			v.Exports = []Export{{TargetID: id("n4"), Slots: rs(src.from, src.from+1364)}}
		}
		member(ms, "n4").View.AtomicMigrationInFlight = true
		return ms
	}
	tests := []struct {
		name   string
		shards int
		want   []string
	}{
		{"shard count lowered back: cancel on every source", 3, []string{
			"CancelMigrations node=n1 (" + ReasonCancelReversedMove + ": n1 -> n4 slots 4096-5460)",
			"CancelMigrations node=n2 (" + ReasonCancelReversedMove + ": n2 -> n4 slots 9557-10921)",
			"CancelMigrations node=n3 (" + ReasonCancelReversedMove + ": n3 -> n4 slots 15019-16383)",
		}},
		{"shard count unchanged: wait for the move", 4, []string{
			"Wait (slot migration in progress: n1)",
		}},
		{"shard count raised further: the move still serves it", 5, []string{
			"Wait (slot migration in progress: n1)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: tt.shards, Members: growing(), AtomicMigration: true})
			var got []string
			for _, a := range w.Actions {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A node retired by scale-in stays in the cluster for DepartureGrace,
// redirecting clients, before it is forgotten; its grace holds up no other
// step. A drained primary has usually become a replica of the node that
// took its last slot by then; either way it waits.
func TestDrainedPrimaryDepartsAfterGrace(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	drained := func(markedAgo time.Duration, alsoDrained bool) []Member {
		nodes := []nd{
			{name: "n1", shard: 0, slots: rs(0, 8191)},
			{name: "n2", shard: 1, slots: rs(8192, 16383)},
			{name: "n3", shard: 2, life: LifecycleLeaving},
		}
		if alsoDrained {
			nodes = append(nodes, nd{name: "n4", shard: 3})
		}
		ms := mesh(nodes...)
		member(ms, "n3").LeavingSince = now.Add(-markedAgo)
		return ms
	}
	tests := []struct {
		name        string
		markedAgo   time.Duration
		alsoDrained bool
		want        string
	}{
		{"within the grace: wait", time.Second, false,
			"Wait (" + ReasonDepartureGrace + ": n3)"},
		{"the grace over: forget", DepartureGrace, false,
			"Forget id=id-n3 on=[n1 n2] (forgetting leaving node: n3)"},
		{"the grace holds up no other drained shard", time.Second, true,
			"MarkLeaving node=n4 (retiring drained shard: n4)"},
	}
	t.Run("a drained primary turned replica waits too", func(t *testing.T) {
		ms := drained(time.Second, false)
		v := member(ms, "n3").View
		v.Role, v.PrimaryID = RoleReplica, id("n2")
		w := Plan(Input{Shards: 2, Members: ms, Now: now})
		if got, want := w.String(), "Wait ("+ReasonDepartureGrace+": n3)"; got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
	t.Run("a roll's outdated node leaves without one", func(t *testing.T) {
		ms := drained(time.Second, false)
		member(ms, "n3").Outdated = true
		w := Plan(Input{Shards: 2, Members: ms, Now: now})
		if got, want := w.String(), "Forget id=id-n3 on=[n1 n2] (forgetting leaving node: n3)"; got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: 2, Members: drained(tt.markedAgo, tt.alsoDrained), Now: now})
			if got := w.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
