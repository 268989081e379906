package topology

import (
	"fmt"
	"testing"
)

func TestBootstrapConverges(t *testing.T) {
	for shards := 1; shards <= 4; shards++ {
		for replicas := 0; replicas <= 2; replicas++ {
			t.Run(fmt.Sprintf("%dx%d", shards, replicas), func(t *testing.T) {
				s := newSim(t, shards, replicas)
				nodes := shards * (1 + replicas)
				// create + meet + activate per node, slots per shard, replicate
				// per replica, plus a few ticks of waiting for pods, gossip
				// and sync.
				bound := 3*nodes + shards + shards*replicas + 12
				steps := s.run(bound, func(a Action) {
					if a.Kind != KindDone && DecideState(true, a) != StateCreating {
						s.fatalf("state during bootstrap: %v", a)
					}
					if a.Kind == KindDone && DecideState(true, a) != StateActive {
						s.fatalf("Done must make the cluster Active")
					}
					if a.Kind == KindDone && a.Reason != ReasonFormed {
						s.fatalf("done reason %q", a.Reason)
					}
				})
				s.assertConverged(1)
				// The first slot plan is the even one: contiguous ranges.
				plan := EvenPlan(shards)
				for i := range shards {
					got := s.slotsOf(s.primaryOf(i).id)
					if len(got) != 1 || got[0] != plan[i] {
						t.Errorf("shard %d holds %v, want %v", i, got, plan[i])
					}
				}
				// Once formed, the steady-state planner agrees at once.
				if a := Plan(s.input()); !a.Done() {
					t.Fatalf("after bootstrap: %v", a)
				}
				t.Logf("%d steps", steps)
			})
		}
	}
}

func TestBootstrapStepOrder(t *testing.T) {
	s := newSim(t, 3, 1)
	var kinds []Kind
	var creates []int
	s.run(100, func(a Action) {
		if len(kinds) == 0 || kinds[len(kinds)-1] != a.Kind {
			kinds = append(kinds, a.Kind)
		}
		if a.Kind == KindCreateNode {
			creates = append(creates, a.CreateNode.ShardIndex)
			if a.CreateNode.JoinType != JoinNone {
				t.Errorf("bootstrap node with join type %q", a.CreateNode.JoinType)
			}
		}
		if a.Kind == KindAddSlots && len(a.AddSlots.Ranges) != 1 {
			t.Errorf("bootstrap slots not one contiguous range: %v", a)
		}
	})
	if fmt.Sprint(creates) != "[0 1 2 0 1 2]" {
		t.Errorf("creation order %v, want even spread", creates)
	}
	// Phases never interleave: create, wait for pods, meet, (gossip),
	// slots, replicate, activate, done.
	order := map[Kind]int{KindCreateNode: 0, KindMeet: 1, KindAddSlots: 2, KindReplicate: 3, KindMarkActive: 4, KindDone: 5}
	last := -1
	for _, k := range kinds {
		o, ok := order[k]
		if !ok {
			continue
		}
		if o < last {
			t.Fatalf("bootstrap phases out of order: %v", kinds)
		}
		last = o
	}
}

func TestBootstrapBlockedByUnschedulablePod(t *testing.T) {
	s := newSim(t, 2, 0)
	s.unschedulable = true
	s.step()
	s.step()
	a := Plan(s.input()).Lead()
	if a.Kind != KindWait || a.Reason != ReasonUnschedulable {
		t.Fatalf("got %v, want unschedulable wait", a)
	}
	if a.Detail == "" {
		t.Errorf("wait should carry the scheduler's reason")
	}
	// Capacity appears: bootstrap resumes by itself.
	for _, p := range s.procs {
		p.unsched = ""
	}
	s.unschedulable = false
	s.run(60, nil)
	s.assertConverged(1)
}

func TestRepeatedActionsAreHarmless(t *testing.T) {
	// The planner keeps nothing between calls and the sim re-plans from a
	// fresh observation every tick, which is what an operator restart
	// looks like. A restart can also land after an action was performed but
	// before its effect was observed, so the same action may be issued
	// again; here every action Valkey accepts twice is applied twice.
	s := newSim(t, 2, 1)
	s.run(100, func(a Action) {
		switch a.Kind {
		case KindMeet, KindReplicate, KindMarkActive:
			s.apply(a)
		}
	})
	s.assertConverged(1)
}

func TestScaleOutAndIn(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
			s := bootstrapped(t, 3, 1)
			s.atomic = atomic
			everyStep := func(a Action) {
				if !s.allSlotsAssigned() {
					s.fatalf("slots unassigned during scaling")
				}
				if a.Kind == KindCreateNode && a.CreateNode.JoinType != JoinShard {
					s.fatalf("scale-out node with join type %q", a.CreateNode.JoinType)
				}
				if a.Kind != KindDone && a.Kind != KindWait && DecideState(false, a) != StateUpdating {
					s.fatalf("state during scaling: %v", a)
				}
			}
			s.shards = 5
			s.run(2000, everyStep)
			s.assertConverged(1)
			if got := len(s.members()); got != 10 {
				t.Fatalf("%d nodes after scale-out", got)
			}

			s.shards = 2
			shardsTouched := map[int]bool{}
			s.run(2000, func(a Action) {
				everyStep(a)
				if a.Kind == KindMarkLeaving {
					shardsTouched[s.byName(a.MarkLeaving.Node).shard] = true
				}
			})
			s.assertConverged(1)
			// Only the drained shards' nodes were retired.
			if len(shardsTouched) != 3 {
				t.Errorf("retired nodes from shards %v, want exactly 3 shards", shardsTouched)
			}
		})
	}
}

func TestScaleOutSpreadWithinBatch(t *testing.T) {
	s := bootstrapped(t, 3, 0)
	s.atomic = true
	s.batch = 100
	s.shards = 4
	s.run(2000, nil)
	s.assertConverged(s.batch)
}

func TestReplicaScaling(t *testing.T) {
	s := bootstrapped(t, 3, 1)
	for _, r := range []int{2, 0, 1} {
		s.replicas = r
		s.run(400, func(a Action) {
			if !s.allSlotsAssigned() {
				s.fatalf("slots unassigned during replica scaling")
			}
			if a.Kind == KindMigrateSlots {
				s.fatalf("replica scaling moved slots: %v", a)
			}
			if a.Kind == KindCreateNode && a.CreateNode.JoinType != JoinReplica {
				s.fatalf("replica with join type %q", a.CreateNode.JoinType)
			}
		})
		s.assertConverged(1)
	}
}

func count(trace []Action, k Kind) int {
	n := 0
	for _, a := range trace {
		if a.Kind == k {
			n++
		}
	}
	return n
}

// The kubelet reports the primary's process exited: its replica is
// promoted at once with FAILOVER FORCE, voted on by the majority.
func TestFailurePrimaryWithReplicaQuorumHeld(t *testing.T) {
	s := bootstrapped(t, 3, 1)
	victim := s.primaryOf(0)
	s.kill(victim.name)
	first := Plan(s.input()).Lead()
	if first.Kind != KindFailover || first.Failover.Mode != FailoverForce || first.Reason != ReasonProcessExited {
		t.Fatalf("got %v, want FAILOVER FORCE at once", first)
	}
	convergesAfterPrimaryLoss(t, s, first)
	if s.forced != 1 {
		t.Errorf("%d FAILOVER FORCE, want 1", s.forced)
	}
}

// A primary whose end the kubelet does not report (its pod is gone, its
// peers flag it) may still run somewhere: Valkey's own election decides.
func TestFailurePrimaryWithReplicaQuorumHeldDeathUnreported(t *testing.T) {
	s := bootstrapped(t, 3, 1)
	victim := s.primaryOf(0)
	s.unreported[victim.name] = true
	s.kill(victim.name)
	first := Plan(s.input()).Lead()
	if first.Kind != KindWait || first.Reason != ReasonWaitAutoFailover {
		t.Fatalf("got %v, want to wait for auto-failover", first)
	}
	convergesAfterPrimaryLoss(t, s, first)
	if s.forced != 0 {
		t.Errorf("%d FAILOVER FORCE over a primary whose end was not reported", s.forced)
	}
}

func convergesAfterPrimaryLoss(t *testing.T, s *sim, first Action) {
	t.Helper()
	if DecideState(false, first) != StateActive {
		t.Errorf("healing must leave the cluster Active")
	}
	var trace []Action
	s.run(100, func(a Action) { trace = append(trace, a) })
	s.assertConverged(1)
	if s.takeovers != 0 {
		t.Errorf("takeover issued although quorum held")
	}
	if count(trace, KindForget) == 0 || count(trace, KindDeleteNode) == 0 {
		t.Errorf("dead primary not forgotten and deleted: %v", trace)
	}
	for _, a := range trace {
		if a.Kind == KindCreateNode && (a.CreateNode.ShardIndex != 0 || a.CreateNode.JoinType != JoinReplica) {
			t.Errorf("replacement %v, want a replica in shard 0", a)
		}
	}
}

func TestFailurePrimaryWithReplicaQuorumLost(t *testing.T) {
	s := bootstrapped(t, 2, 1)
	s.kill(s.primaryOf(0).name)
	first := Plan(s.input()).Lead()
	if first.Kind != KindFailover || first.Failover.Mode != FailoverTakeover || first.Reason != ReasonTakeover {
		t.Fatalf("got %v, want TAKEOVER", first)
	}
	if s.byName(first.Failover.Node).shard != 0 {
		t.Errorf("takeover outside the failed shard")
	}
	s.run(100, nil)
	s.assertConverged(1)
	if s.takeovers != 1 {
		t.Errorf("%d takeovers", s.takeovers)
	}
}

func TestFailurePrimaryWithoutReplica(t *testing.T) {
	for _, shards := range []int{1, 2, 3} { // 1 and 2 lose quorum, 3 keeps it
		t.Run(fmt.Sprint(shards), func(t *testing.T) {
			s := bootstrapped(t, shards, 0)
			victim := s.primaryOf(shards - 1)
			lost := s.slotsOf(victim.id)
			s.kill(victim.name)
			var trace []Action
			s.run(100, func(a Action) { trace = append(trace, a) })
			s.assertConverged(1)
			var created, assigned bool
			for _, a := range trace {
				if a.Kind == KindCreateNode {
					created = a.CreateNode.JoinType == JoinPrimary && a.CreateNode.ShardIndex == shards-1
				}
				if a.Kind == KindAddSlots {
					assigned = fmt.Sprint(a.AddSlots.Ranges) == fmt.Sprint(lost)
				}
			}
			if !created || !assigned {
				t.Errorf("want a fresh primary in shard %d given %v: %v", shards-1, lost, trace)
			}
			if count(trace, KindMigrateSlots) != 0 {
				t.Errorf("recovery moved slots: %v", trace)
			}
		})
	}
}

func TestFailureWholeShardLost(t *testing.T) {
	s := bootstrapped(t, 3, 1)
	s.kill(s.primaryOf(1).name)
	s.kill(s.replicasOf(1)[0].name)
	s.run(200, nil)
	s.assertConverged(1)
}

func TestFailureReplica(t *testing.T) {
	s := bootstrapped(t, 3, 2)
	s.kill(s.replicasOf(2)[1].name)
	var trace []Action
	s.run(100, func(a Action) { trace = append(trace, a) })
	s.assertConverged(1)
	if count(trace, KindFailover) != 0 {
		t.Errorf("replica loss caused a failover")
	}
}

func TestFailureDuringScaleOut(t *testing.T) {
	s := bootstrapped(t, 3, 1)
	s.atomic = true
	s.shards = 4
	for range 30 {
		s.step()
	}
	s.kill(s.primaryOf(0).name)
	s.run(2000, nil)
	s.assertConverged(1)
}

func TestRollingReplacement(t *testing.T) {
	for replicas := 0; replicas <= 2; replicas++ {
		t.Run(fmt.Sprint(replicas), func(t *testing.T) {
			s := bootstrapped(t, 3, replicas)
			for k := range s.failovers {
				delete(s.failovers, k)
			}
			s.version++
			var order []int
			s.run(500, func(a Action) {
				if !s.allSlotsAssigned() {
					s.fatalf("slots unassigned during roll")
				}
				inMotion := map[int]bool{}
				for _, p := range s.members() {
					if p.lifecycle != LifecycleActive {
						inMotion[p.shard] = true
					}
				}
				if len(inMotion) > 1 {
					s.fatalf("shards in motion at once: %v", inMotion)
				}
				for sh := range inMotion {
					if len(order) == 0 || order[len(order)-1] != sh {
						order = append(order, sh)
					}
				}
				for sh := range s.shards {
					synced := 0
					for _, r := range s.replicasOf(sh) {
						if r.synced() {
							synced++
						}
					}
					if synced < replicas {
						s.fatalf("shard %d dipped to %d synced replicas", sh, synced)
					}
				}
				if a.Kind == KindFailover && a.Reason != ReasonRollFailover {
					s.fatalf("unexpected failover %v", a)
				}
				if a.Kind != KindDone && a.Kind != KindWait && DecideState(false, a) != StateUpdating {
					s.fatalf("state during roll: %v", a)
				}
			})
			s.assertConverged(1)
			for sh := range s.shards {
				if s.failovers[sh] != 1 {
					t.Errorf("shard %d: %d failovers, want 1", sh, s.failovers[sh])
				}
			}
			if fmt.Sprint(order) != "[0 1 2]" {
				t.Errorf("shards rolled in order %v", order)
			}
		})
	}
}

func TestRollStallsOnPendingReplacement(t *testing.T) {
	s := bootstrapped(t, 2, 1)
	s.version++
	s.unschedulable = true
	for range 5 {
		s.step()
	}
	a := Plan(s.input()).Lead()
	if a.Kind != KindWait {
		t.Fatalf("got %v, want the roll to stall", a)
	}
	for _, p := range s.members() {
		if p.version != s.version {
			continue
		}
		if p.shard != 0 {
			t.Errorf("roll started on shard %d while shard 0 stalls", p.shard)
		}
	}
	for _, p := range s.procs {
		p.unsched = ""
	}
	s.unschedulable = false
	s.run(300, nil)
	s.assertConverged(1)
}

func TestReplicaDiesDuringRoll(t *testing.T) {
	s := bootstrapped(t, 3, 1)
	s.version++
	for range 12 {
		s.step()
	}
	s.kill(s.replicasOf(2)[0].name)
	s.run(500, func(a Action) {
		if !s.allSlotsAssigned() {
			s.fatalf("slots unassigned")
		}
	})
	s.assertConverged(1)
}
