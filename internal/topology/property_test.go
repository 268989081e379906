package topology

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWavesUnderChaos drives the planner through random histories: spec
// edits, lost nodes, stalled processes, rolls and a partial view every
// tick, then lets the cluster settle, and asserts it converges to the
// exact desired shape. The simulator fails the test on the spot when a
// wave breaks the contract or an action is illegal: a slot assigned while
// another primary owns it, a node forgotten while its pod runs and nobody
// retired it, an action on a node the operator cannot reach, a failover
// sharing its wave; and when it would lose keys that still exist: a
// promotion of a replica that never synced, a slot owner forgotten while
// a copy of its keys runs (a synced replica, one being retired included),
// the last copy of a lost primary's keys deleted, or a forget of a slot
// owner not reported as a loss.
func TestWavesUnderChaos(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 40
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			chaos(t, uint64(seed), nil)
		})
	}
}

// chaos runs one random history; onPlan, when set, sees every tick's
// input and wave.
func chaos(t *testing.T, seed uint64, onPlan func(s *sim, in Input, wv Wave)) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := newSim(t, 1+rng.IntN(4), rng.IntN(3))
	if onPlan != nil {
		s.onPlan = func(in Input, wv Wave) { onPlan(s, in, wv) }
	}
	s.atomic = rng.IntN(2) == 0
	s.batch = 256
	s.rng = rand.New(rand.NewPCG(seed, 1))
	s.run(400, nil)
	s.assertConverged(1)

	running := func() []*simProc {
		var out []*simProc
		for _, p := range s.members() {
			if p.alive && p.phase == PodRunning {
				out = append(out, p)
			}
		}
		return out
	}
	for range 60 {
		clear(s.silent)
		switch rng.IntN(13) {
		case 0:
			s.shards = 1 + rng.IntN(5)
		case 1:
			s.replicas = rng.IntN(3)
		case 2:
			if ps := running(); len(ps) > 0 {
				p := ps[rng.IntN(len(ps))]
				// Every other process dies without the kubelet's word:
				// both the forced failover and Valkey's own election run.
				s.unreported[p.name] = p.name[len(p.name)-1]%2 == 0
				s.kill(p.name)
			}
		case 3:
			if ps := running(); len(ps) > 0 {
				ps[rng.IntN(len(ps))].stalled = true
			}
		case 4, 5:
			for _, p := range s.procs {
				p.stalled = false
			}
		case 6:
			// A config edit: every node rolls, and kills land mid-roll.
			s.version++
		}
		for _, p := range running() {
			if rng.IntN(10) == 0 {
				s.silent[p.name] = true
			}
		}
		s.step()
	}
	clear(s.silent)
	for _, p := range s.procs {
		p.stalled = false
	}
	for range 300 {
		if s.step().Done() {
			s.assertConverged(1)
			return
		}
	}
	s.fatalf("no convergence within 300 ticks after the chaos stopped")
}

// A running pod hidden from the operator (relabelled out of its cache, or
// its object deleted while the kubelet has not stopped the process yet)
// is never forgotten, deleted or replaced while its peers still reach
// it, whatever its role, and the cluster is whole once it is seen again.
func TestHiddenPodIsKept(t *testing.T) {
	for _, shape := range []struct{ shards, replicas int }{{3, 0}, {3, 1}, {1, 1}} {
		for _, role := range []Role{RolePrimary, RoleReplica} {
			if role == RoleReplica && shape.replicas == 0 {
				continue
			}
			t.Run(fmt.Sprintf("%dx%d/%s", shape.shards, shape.replicas, role), func(t *testing.T) {
				s := bootstrapped(t, shape.shards, shape.replicas)
				var victim *simProc
				for _, p := range s.members() {
					if p.role == role {
						victim = p
						break
					}
				}
				s.hidden[victim.name] = true
				for range 30 {
					s.step()
				}
				if !victim.member || !victim.alive {
					t.Fatalf("%s was removed while hidden", victim.name)
				}
				clear(s.hidden)
				s.run(200, nil)
				s.assertConverged(1)
				if !victim.member {
					t.Fatalf("%s was removed once seen again", victim.name)
				}
			})
		}
	}
}
