package topology

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// nd describes one member for the hand-built fixtures below.
type nd struct {
	name     string
	shard    int
	life     Lifecycle
	phase    PodPhase
	unsched  string
	role     Role
	primary  string // name of the primary a replica follows
	slots    []SlotRange
	outdated bool
	noView   bool
}

func id(name string) string { return "id-" + name }
func ip(name string) string { return "10.1.0." + strings.TrimPrefix(name, "n") }

// mesh builds members that all know each other, with consistent views.
func mesh(nodes ...nd) []Member {
	assigned := 0
	for _, n := range nodes {
		assigned += CountSlots(n.slots)
	}
	var out []Member
	for _, n := range nodes {
		if n.life == "" {
			n.life = LifecycleActive
		}
		if n.phase == "" {
			n.phase = PodRunning
		}
		if n.role == "" {
			n.role = RolePrimary
		}
		m := Member{Name: n.name, ShardIndex: n.shard, Lifecycle: n.life, Outdated: n.outdated,
			NodeID: id(n.name), Pod: Pod{Phase: n.phase, Unschedulable: n.unsched}}
		if n.phase == PodRunning {
			m.Pod.IP = ip(n.name)
		}
		if n.phase == PodRunning && !n.noView {
			v := &View{ID: id(n.name), Role: n.role, Slots: n.slots, SlotsAssigned: assigned,
				ClusterOK: assigned == TotalSlots}
			if n.role == RoleReplica {
				v.PrimaryID, v.LinkUp, v.SyncDone, v.HoldsData = id(n.primary), true, true, true
			}
			for _, o := range nodes {
				if o.name == n.name || (o.phase != "" && o.phase != PodRunning) {
					continue
				}
				p := Peer{ID: id(o.name), IP: ip(o.name), Role: o.role, Slots: o.slots}
				if p.Role == "" {
					p.Role = RolePrimary
				}
				if o.role == RoleReplica {
					p.PrimaryID = id(o.primary)
				}
				v.Peers = append(v.Peers, p)
			}
			m.View = v
		}
		out = append(out, m)
	}
	return out
}

func member(ms []Member, name string) *Member {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	panic(name)
}

// isolate makes name know nobody and nobody know it.
func isolate(ms []Member, name string) {
	for i := range ms {
		v := ms[i].View
		if v == nil {
			continue
		}
		if ms[i].Name == name {
			v.Peers = nil
			continue
		}
		v.Peers = slices.DeleteFunc(v.Peers, func(p Peer) bool { return p.ID == id(name) })
	}
}

// kill marks name's pod gone and flags it failed in every view.
func kill(ms []Member, name string, fail bool) {
	m := member(ms, name)
	m.Pod.Phase, m.View = PodGone, nil
	for i := range ms {
		if v := ms[i].View; v != nil {
			for j := range v.Peers {
				if v.Peers[j].ID == id(name) {
					v.Peers[j].Fail, v.Peers[j].PFail = fail, !fail
				}
			}
		}
	}
}

func rs(a, b int) []SlotRange { return []SlotRange{{Start: a, End: b}} }

// formed3 is a healthy 3x1 cluster: primaries n1..n3, replicas n4..n6.
func formed3() []Member { return mesh(formed3Nodes()...) }

// formed3Nodes describes a converged 3x1 cluster, n1-n3 primaries.
func formed3Nodes() []nd {
	return []nd{
		{name: "n1", shard: 0, slots: rs(0, 5461)},
		{name: "n2", shard: 1, slots: rs(5462, 10922)},
		{name: "n3", shard: 2, slots: rs(10923, 16383)},
		{name: "n4", shard: 0, role: RoleReplica, primary: "n1"},
		{name: "n5", shard: 1, role: RoleReplica, primary: "n2"},
		{name: "n6", shard: 2, role: RoleReplica, primary: "n3"},
	}
}

func TestSteadyDecisions(t *testing.T) {
	tests := []struct {
		name    string
		shards  int
		members func() []Member
		atomic  bool
		want    string
	}{
		{"converged", 3, formed3, false, "Done (cluster converged)"},
		{"dead primary, its end not reported by the kubelet, replica, quorum: wait for Valkey", 3, func() []Member {
			ms := formed3()
			kill(ms, "n1", true)
			return ms
		}, false, "Wait (" + ReasonWaitAutoFailover + ": n1)"},
		{"primary whose process the kubelet reports exited, quorum: FAILOVER FORCE at once", 3, func() []Member {
			ms := formed3()
			kill(ms, "n1", false)
			member(ms, "n1").Pod.Exited = true
			return ms
		}, false, "Failover node=n4 mode=force (" + ReasonProcessExited + ": n4 replaces n1)"},
		{"exited primary whose FORCE was never elected: TAKEOVER once overdue", 3, func() []Member {
			ms := formed3()
			kill(ms, "n1", false)
			member(ms, "n1").Pod.Exited = true
			v := member(ms, "n4").View
			v.LinkUp, v.SyncDone, v.LinkDownSeconds = false, false, int64(ElectionDeadline/time.Second)
			return ms
		}, false, "Failover node=n4 mode=takeover (" + ReasonElectionOverdue + ": n4 replaces n1)"},
		{"a roll's replica that cannot join, its spec changed back: retired, not waited for", 1, func() []Member {
			ms := mesh(
				nd{name: "n1", shard: 0, slots: rs(0, 16383)},
				nd{name: "n2", shard: 0, role: RoleReplica, primary: "n1"},
				nd{name: "n3", shard: 0, role: RoleReplica, primary: "n1", life: LifecycleJoining, outdated: true},
			)
			member(ms, "n3").JoinType = JoinReplica
			v := member(ms, "n3").View
			v.LinkUp, v.SyncDone, v.HoldsData = false, false, false
			return ms
		}, false, "MarkLeaving node=n3 (" + ReasonRetireOutdatedJoiner + ": n3)"},
		{"a roll's replica the scheduler cannot place, its spec changed since: replaced", 1, func() []Member {
			ms := mesh(
				nd{name: "n1", shard: 0, slots: rs(0, 16383), outdated: true},
				nd{name: "n2", shard: 0, role: RoleReplica, primary: "n1", outdated: true},
				nd{name: "n3", shard: 0, life: LifecycleJoining, phase: PodPending, unsched: "0/3 nodes available", outdated: true},
			)
			member(ms, "n3").JoinType = JoinReplica
			return ms
		}, false, "DeleteNode node=n3 (" + ReasonReplaceUnplaceable + ": n3: 0/3 nodes available)"},
		{"a roll's replica the scheduler cannot place, its spec current: waited for, never replaced", 1, func() []Member {
			ms := mesh(
				nd{name: "n1", shard: 0, slots: rs(0, 16383), outdated: true},
				nd{name: "n2", shard: 0, role: RoleReplica, primary: "n1", outdated: true},
				nd{name: "n3", shard: 0, life: LifecycleJoining, phase: PodPending, unsched: "0/3 nodes available"},
			)
			member(ms, "n3").JoinType = JoinReplica
			return ms
		}, false, "Wait (" + ReasonPodUnschedulable + ": n3: 0/3 nodes available)"},
		{"a staying member some peers forgot is met by each of them", 3, func() []Member {
			ms := formed3()
			for _, n := range []string{"n2", "n3", "n5"} {
				v := member(ms, n).View
				v.Peers = slices.DeleteFunc(v.Peers, func(p Peer) bool { return p.ID == id("n1") })
			}
			return ms
		}, false, "Meet node=n2 seed=n1(10.1.0.1) (" + ReasonReintroduce + ": n2 meets n1); " +
			"Meet node=n5 seed=n1(10.1.0.1) (" + ReasonReintroduce + ": n5 meets n1); " +
			"Meet node=n3 seed=n1(10.1.0.1) (" + ReasonReintroduce + ": n3 meets n1)"},
		{"two dead primaries of three: quorum lost, takeover", 3, func() []Member {
			ms := formed3()
			kill(ms, "n1", false)
			kill(ms, "n2", false)
			return ms
		}, false, "Failover node=n4 mode=takeover (" + ReasonTakeover + ": n4 replaces n1)"},
		{"unreachable primary, pod running, not flagged: no action", 3, func() []Member {
			ms := formed3()
			member(ms, "n2").View = nil
			return ms
		}, false, "Wait (waiting for node to answer: n2)"},
		{"dead primary without replica is forgotten everywhere", 3, func() []Member {
			ms := formed3()
			kill(ms, "n6", true)
			kill(ms, "n3", true)
			return ms
		}, false, "Forget id=id-n3 on=[n1 n2 n4 n5] (primary lost with no replica, forgetting it; a fresh primary takes its slots: n3)"},
		{"stalled primary without replica answers again while still flagged FAIL: never forgotten", 3, func() []Member {
			ms := formed3()
			kill(ms, "n6", true)
			kill(ms, "n3", true)
			// It resumed: its pod never stopped and it answers, but its
			// peers keep the FAIL flag until Valkey's own undo time passes.
			n3 := member(ms, "n3")
			n3.Pod.Phase, n3.Pod.IP = PodRunning, ip("n3")
			n3.View = &View{ID: id("n3"), Role: RolePrimary, Slots: rs(10923, 16383), SlotsAssigned: TotalSlots}
			for _, o := range []string{"n1", "n2", "n4", "n5"} {
				n3.View.Peers = append(n3.View.Peers, Peer{ID: id(o), IP: ip(o), Role: member(ms, o).View.Role,
					PrimaryID: member(ms, o).View.PrimaryID, Slots: member(ms, o).View.Slots})
			}
			return ms
		}, false, "Wait (" + ReasonPrimaryFlaggedButRunning + ": n3)"},
		{"stalled primary without replica, pod running, flagged FAIL: never forgotten", 3, func() []Member {
			ms := formed3()
			kill(ms, "n6", true)
			kill(ms, "n3", true)
			n3 := member(ms, "n3")
			n3.Pod.Phase, n3.Pod.IP = PodRunning, ip("n3")
			return ms
		}, false, "Wait (waiting for node to answer: n3)"},
		{"dead replica is forgotten, skipping the replicas of nobody", 3, func() []Member {
			ms := formed3()
			kill(ms, "n5", true)
			return ms
		}, false, "Forget id=id-n5 on=[n1 n2 n3 n4 n6] (forgetting departed node: n5)"},
		{"forgotten dead replica is deleted", 3, func() []Member {
			ms := formed3()
			kill(ms, "n5", true)
			for i := range ms {
				if v := ms[i].View; v != nil {
					v.Peers = slices.DeleteFunc(v.Peers, func(p Peer) bool { return p.ID == id("n5") })
				}
			}
			return ms
		}, false, "DeleteNode node=n5 (deleting dead node: n5)"},
		{"missing replica is recreated in its shard", 3, func() []Member {
			ms := formed3()
			ms = slices.DeleteFunc(ms, func(m Member) bool { return m.Name == "n5" })
			for i := range ms {
				ms[i].View.Peers = slices.DeleteFunc(ms[i].View.Peers, func(p Peer) bool { return p.ID == id("n5") })
			}
			return ms
		}, false, `CreateNode shard=1 join="replica" (restoring replica count: shard 1)`},
		{"handshake entries are never forgotten", 3, func() []Member {
			ms := formed3()
			v := member(ms, "n1").View
			v.Peers = append(v.Peers, Peer{ID: "tmp", IP: "10.9.9.9", Handshake: true})
			return ms
		}, false, "Done (cluster converged)"},
		{"unknown ID at the address of a member without ID yet is kept", 3, func() []Member {
			ms := formed3()
			ms = append(ms, Member{Name: "n7", ShardIndex: 0, Lifecycle: LifecycleJoining,
				Pod: Pod{Phase: PodRunning, IP: "10.1.0.7"}})
			v := member(ms, "n1").View
			v.Peers = append(v.Peers, Peer{ID: "id-n7", IP: "10.1.0.7", Role: RolePrimary})
			return ms
		}, false, "MarkLeaving node=n7 (removing surplus replica: n7)"},
		{"classic migration left half-done is resumed", 3, func() []Member {
			ms := formed3()
			member(ms, "n1").View.Migrating = map[int]string{5460: id("n2"), 5461: id("n2")}
			member(ms, "n2").View.Importing = map[int]string{5460: id("n1"), 5461: id("n1")}
			return ms
		}, true, "MigrateSlots n1->n2 slots=5460-5461 method=classic (resuming interrupted slot migration: n1 -> n2 slots 5460-5461 by SETSLOT and MIGRATE)"},
		{"atomic migration in flight is waited for", 3, func() []Member {
			ms := formed3()
			member(ms, "n3").View.AtomicMigrationInFlight = true
			return ms
		}, true, "Wait (slot migration in progress: n3)"},
		{"scale out creates every node of the new shard at once", 4, formed3, true,
			`CreateNode shard=3 join="shard" (adding shard: shard 3); CreateNode shard=3 join="shard" (adding shard: shard 3)`},
		{"scale in drains the smallest shard (ties: highest index) to every deficit at once", 2, formed3, true,
			"MigrateSlots n3->n1 slots=10923-13652 method=atomic empties-source (moving slots towards even distribution: n3 -> n1 slots 10923-13652 by CLUSTER MIGRATESLOTS); " +
				"MigrateSlots n3->n2 slots=13653-16383 method=atomic empties-source (moving slots towards even distribution: n3 -> n2 slots 13653-16383 by CLUSTER MIGRATESLOTS)"},
		{"classic scale in moves one batch to each target at once", 2, formed3, false,
			"MigrateSlots n3->n1 slots=13397-13652 method=classic (moving slots towards even distribution: n3 -> n1 slots 13397-13652 by SETSLOT and MIGRATE); " +
				"MigrateSlots n3->n2 slots=16128-16383 method=classic (moving slots towards even distribution: n3 -> n2 slots 16128-16383 by SETSLOT and MIGRATE)"},
		{"atomic scale out: every source gives its share to the new shard at once", 4, func() []Member {
			return mesh(append(formed3Nodes(),
				nd{name: "n7", shard: 3},
				nd{name: "n8", shard: 3, role: RoleReplica, primary: "n7"})...)
		}, true, "MigrateSlots n1->n7 slots=4096-5461 method=atomic (moving slots towards even distribution: n1 -> n7 slots 4096-5461 by CLUSTER MIGRATESLOTS); " +
			"MigrateSlots n2->n7 slots=9558-10922 method=atomic (moving slots towards even distribution: n2 -> n7 slots 9558-10922 by CLUSTER MIGRATESLOTS); " +
			"MigrateSlots n3->n7 slots=15019-16383 method=atomic (moving slots towards even distribution: n3 -> n7 slots 15019-16383 by CLUSTER MIGRATESLOTS)"},
		{"a new primary that still says cluster_state:fail receives nothing", 4, func() []Member {
			ms := mesh(append(formed3Nodes(),
				nd{name: "n7", shard: 3},
				nd{name: "n8", shard: 3, role: RoleReplica, primary: "n7"})...)
			member(ms, "n7").View.ClusterOK = false
			return ms
		}, true, "Wait (" + ReasonReceiverNotReady + ": n7)"},
		{"a replica being retired that holds a lost primary's keys takes over", 1, func() []Member {
			ms := mesh(nd{name: "n1", shard: 0, slots: rs(0, 16383)},
				nd{name: "n2", shard: 0, role: RoleReplica, primary: "n1", life: LifecycleLeaving})
			kill(ms, "n1", false)
			return ms
		}, false, "Failover node=n2 mode=takeover (" + ReasonTakeover + ": n2 replaces n1)"},
		{"a replica being retired that Valkey promoted is kept", 1, func() []Member {
			return mesh(nd{name: "n2", shard: 0, slots: rs(0, 16383), life: LifecycleLeaving})
		}, false, "MarkActive node=n2 (" + ReasonKeepPromotedLeaver + ": n2)"},
		{"a replica of a departed slotless primary, alone in its shard, goes", 3, func() []Member {
			ms := mesh(nd{name: "n1", shard: 0, slots: rs(0, 8191)},
				nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
				nd{name: "n3", shard: 2, role: RoleReplica, primary: "n9"})
			v := member(ms, "n3").View
			v.Peers = append(v.Peers, Peer{ID: id("n9"), IP: ip("n9"), Role: RolePrimary, Fail: true})
			return ms
		}, false, "DeleteNode node=n3 (" + ReasonStrandedReplica + ": n3 (replica of id-n9))"},
		{"a node cut off from the rest, with slots nobody else claims, is met again", 2, func() []Member {
			ms := mesh(nd{name: "n1", shard: 0, slots: rs(0, 8191)}, nd{name: "n2", shard: 1, slots: rs(8192, 16383)})
			isolate(ms, "n2")
			return ms
		}, false, "Meet node=n2 seed=n1(" + ip("n1") + ") (" + ReasonMeet + ": n2 meets n1)"},
		{"a move whose last atomic attempt failed is a retry that says why", 2, func() []Member {
			ms := formed3()
			member(ms, "n3").View.AtomicMigrationFailure = "n3 export of slots [16320-16383] failed: Connection lost to target"
			return ms
		}, true, "MigrateSlots n3->n1 slots=10923-13652 method=atomic empties-source (" + ReasonRetryMigration +
			": n3 -> n1 slots 10923-13652 by CLUSTER MIGRATESLOTS; last attempt: n3 export of slots [16320-16383] failed: Connection lost to target); " +
			"MigrateSlots n3->n2 slots=13653-16383 method=atomic empties-source (" + ReasonRetryMigration +
			": n3 -> n2 slots 13653-16383 by CLUSTER MIGRATESLOTS; last attempt: n3 export of slots [16320-16383] failed: Connection lost to target)"},
		{"drained shard is retired, replica first", 2, func() []Member {
			return mesh(
				nd{name: "n1", shard: 0, slots: rs(0, 8191)},
				nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
				nd{name: "n3", shard: 2},
				nd{name: "n4", shard: 0, role: RoleReplica, primary: "n1"},
				nd{name: "n5", shard: 1, role: RoleReplica, primary: "n2"},
				nd{name: "n6", shard: 2, role: RoleReplica, primary: "n3"})
		}, true, "MarkLeaving node=n6 (retiring drained shard: n6)"},
		{"leaving replica is forgotten, then deleted", 2, func() []Member {
			ms := mesh(
				nd{name: "n1", shard: 0, slots: rs(0, 8191)},
				nd{name: "n2", shard: 1, slots: rs(8192, 16383)},
				nd{name: "n3", shard: 2, life: LifecycleLeaving},
				nd{name: "n4", shard: 0, role: RoleReplica, primary: "n1"},
				nd{name: "n5", shard: 1, role: RoleReplica, primary: "n2"},
				nd{name: "n6", shard: 2, life: LifecycleLeaving, role: RoleReplica, primary: "n3"})
			return ms
		}, true, "Forget id=id-n6 on=[n1 n2 n3 n4 n5] (forgetting leaving node: n6)"},
		{"a leaving slot holder hands its role to a replica first", 3, func() []Member {
			ms := formed3()
			member(ms, "n1").Lifecycle = LifecycleLeaving
			return ms
		}, false, "Failover node=n4 mode=default (moving the primary role off a leaving node: n4 replaces n1)"},
		{"rolling starts with a replacement in the first shard", 3, func() []Member {
			ms := formed3()
			for i := range ms {
				ms[i].Outdated = true
			}
			return ms
		}, false, `CreateNode shard=0 join="replica" (creating replacement node: shard 0)`},
		{"outdated primary fails over onto the up-to-date replica", 3, func() []Member {
			ms := formed3()
			member(ms, "n1").Outdated = true
			return ms
		}, false, "Failover node=n4 mode=default (" + ReasonRollFailover + ": n4 replaces n1)"},
		{"surplus outdated replica retired before failover", 3, func() []Member {
			ms := mesh(
				nd{name: "n1", shard: 0, slots: rs(0, 5461), outdated: true},
				nd{name: "n2", shard: 1, slots: rs(5462, 10922)},
				nd{name: "n3", shard: 2, slots: rs(10923, 16383)},
				nd{name: "n4", shard: 0, role: RoleReplica, primary: "n1", outdated: true},
				nd{name: "n5", shard: 1, role: RoleReplica, primary: "n2"},
				nd{name: "n6", shard: 2, role: RoleReplica, primary: "n3"},
				nd{name: "n7", shard: 0, role: RoleReplica, primary: "n1"})
			return ms
		}, false, "MarkLeaving node=n4 (retiring outdated replica: n4)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Shards: tt.shards, ReplicasPerShard: 1, AtomicMigration: tt.atomic, Members: tt.members()}
			a := Plan(in)
			if got := a.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRepeatedFailoverIsHeld(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		requested time.Time
		now       time.Time
		want      string
	}{
		{"never requested", time.Time{}, now,
			"Failover node=n4 mode=default (" + ReasonRollFailover + ": n4 replaces n1)"},
		{"requested just now: wait for roles to flip", now.Add(-time.Second), now,
			"Wait (" + ReasonFailoverInFlight + ": n4 replaces n1)"},
		{"requested within the grace", now.Add(-FailoverGrace + time.Millisecond), now,
			"Wait (" + ReasonFailoverInFlight + ": n4 replaces n1)"},
		{"grace over: the failover did not happen, ask again", now.Add(-FailoverGrace), now,
			"Failover node=n4 mode=default (" + ReasonRollFailover + ": n4 replaces n1)"},
		{"request from the future (clock skew) is not trusted", now.Add(time.Minute), now,
			"Failover node=n4 mode=default (" + ReasonRollFailover + ": n4 replaces n1)"},
		{"no clock: never held", now, time.Time{},
			"Failover node=n4 mode=default (" + ReasonRollFailover + ": n4 replaces n1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := formed3()
			member(ms, "n1").Outdated = true
			member(ms, "n4").FailoverRequested = tt.requested
			a := Plan(Input{Shards: 3, ReplicasPerShard: 1, Members: ms, Now: tt.now})
			if got := a.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPlanDoesNotMutateInput(t *testing.T) {
	ms := formed3()
	kill(ms, "n1", false)
	kill(ms, "n2", false)
	before := fmt.Sprintf("%+v", ms)
	for i := range ms {
		if ms[i].View != nil {
			before += fmt.Sprintf("%+v", *ms[i].View)
		}
	}
	in := Input{Shards: 3, ReplicasPerShard: 1, Members: ms}
	a, b := Plan(in), Plan(in)
	if a.String() != b.String() {
		t.Fatalf("not deterministic: %v vs %v", a, b)
	}
	after := fmt.Sprintf("%+v", ms)
	for i := range ms {
		if ms[i].View != nil {
			after += fmt.Sprintf("%+v", *ms[i].View)
		}
	}
	if before != after {
		t.Fatalf("Plan mutated its input")
	}
}

func TestInvalidShape(t *testing.T) {
	if a := Plan(Input{Shards: 0}).Lead(); a.Kind != KindWait {
		t.Fatalf("got %v", a)
	}
}
