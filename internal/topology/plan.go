package topology

import (
	"fmt"
	"time"
)

// FailoverGrace is how long a requested CLUSTER FAILOVER is given to flip
// roles before the planner may ask again: Valkey's manual-failover timeout
// (5 s) plus the election and the gossip that lets every node see it.
const FailoverGrace = 15 * time.Second

// Plan returns the wave of actions to run now for the cluster described by
// in, or a wave holding only Done when it has its desired shape, or only a
// Wait with the reason nothing can be done this tick. It keeps no state: the
// same input always yields the same answer.
//
// The steps run in priority order and the first that has something to say
// decides the wave; a step that widens (bootstrap, joins, replica counts,
// new shards, atomic moves) returns every independent action it finds.
func Plan(in Input) Wave {
	if in.Shards < 1 || in.ReplicasPerShard < 0 {
		return waveOf(wait(TierSteady, "invalid desired shape",
			fmt.Sprintf("shards=%d replicasPerShard=%d", in.Shards, in.ReplicasPerShard)))
	}
	w := newWorld(in)
	steps := []func() ([]Action, bool){w.handOvers, w.readdress, w.reintroduce, one(w.primaries), one(w.redirectMigrations), one(w.removeDead), one(w.replaceUnplaceable)}
	if in.Creating {
		steps = append(steps, w.bootstrap)
	} else {
		steps = append(steps,
			one(w.orphans), w.joins, w.replicaCounts, one(w.coverage), // stability
			w.cancelReversedMoves, one(w.migrations), one(w.replicaSlotStates), one(w.finishLeaving), one(w.retireDrained), w.moves, w.addShards, // topology
			one(w.roll),    // updates
			one(w.cleanup), // cleanup
			one(w.settled))
	}
	for _, step := range steps {
		if as, ok := step(); ok && len(as) > 0 {
			return w.holds(w.finish(as))
		}
	}
	return waveOf(wait(TierSteady, "waiting for the cluster to settle", ""))
}

// one adapts a step that decides a single action.
func one(step func() (Action, bool)) func() ([]Action, bool) {
	return func() ([]Action, bool) {
		a, ok := step()
		if !ok {
			return nil, false
		}
		return []Action{a}, true
	}
}

// finish applies the per-action guards and keeps the wave's shape: held
// actions turn into Waits, which only stand alone.
func (w *world) finish(as []Action) Wave {
	out := make([]Action, 0, len(as))
	var held *Action
	for _, a := range as {
		a = w.noteFailedMigration(w.holdRepeatedFailover(a))
		if a.Kind == KindWait || a.Kind == KindDone {
			if held == nil {
				held = &a
			}
			continue
		}
		out = append(out, a)
	}
	if len(out) == 0 && held != nil {
		return waveOf(*held)
	}
	return Wave{Actions: out}
}

// noteFailedMigration marks an atomic slot move whose source's last
// attempt failed as a retry and says why it failed, so the failure is seen
// (and the retry paced) rather than the command silently re-issued.
func (w *world) noteFailedMigration(a Action) Action {
	if a.Kind != KindMigrateSlots || a.MigrateSlots.Method != MigrationAtomic {
		return a
	}
	src := w.byName[a.MigrateSlots.From]
	if src == nil || src.View == nil || src.View.AtomicMigrationFailure == "" {
		return a
	}
	a.Reason, a.Retry = ReasonRetryMigration, true
	a.Detail += "; last attempt: " + src.View.AtomicMigrationFailure
	return a
}

// holdRepeatedFailover turns a Failover on a node that was asked to fail over
// less than FailoverGrace ago, in the same or a stronger mode, into a Wait.
// Roles flip only after the replica has caught up and won its election, so
// until then every view still shows the old primary and the step that
// asked would ask again: one failover per primary means remembering the
// request (in the API, so a restarted operator remembers it too). A
// stronger mode goes ahead: it is asked for because what the first one
// needed is gone (a hand-over's primary whose process exited meanwhile
// can no longer complete it).
func (w *world) holdRepeatedFailover(a Action) Action {
	if a.Kind != KindFailover {
		return a
	}
	n := w.byName[a.Failover.Node]
	if n == nil || n.FailoverRequested.IsZero() || w.in.Now.IsZero() {
		return a
	}
	if age := w.in.Now.Sub(n.FailoverRequested); age >= 0 && age < FailoverGrace &&
		a.Failover.Mode.strength() <= n.FailoverRequestedMode.strength() {
		return waitOn(a.Tier, CauseFailoverInFlight, ReasonFailoverInFlight, a.Detail)
	}
	return a
}

// noted remembers the first reason a step skipped something, so the final
// Wait can say what the cluster is waiting for.
type noted struct{ first *Action }

func (n *noted) add(a Action) {
	if n.first == nil {
		n.first = &a
	}
}

func (n *noted) get() (Action, bool) {
	if n.first == nil {
		return Action{}, false
	}
	return *n.first, true
}

// lifecycleTier is the work a node in motion belongs to, so a wait on it
// keeps that work's state and Degraded condition instead of flickering to
// steady between its steps; a settled node that does not answer is none.
func (w *world) lifecycleTier(n *node) Tier {
	switch {
	case n.joining():
		return w.joinTier(n)
	case n.leaving():
		return w.departureTier(n)
	default:
		return TierSteady
	}
}

func (w *world) departureTier(n *node) Tier {
	switch {
	case !n.leaving():
		return TierStability
	case n.Outdated:
		return TierUpdate
	default:
		return TierTopology
	}
}

// joinTier says which work a joining node belongs to.
func (w *world) joinTier(n *node) Tier {
	if n.JoinType == JoinShard {
		return TierTopology
	}
	for _, o := range w.shardMembers(n.ShardIndex) {
		if o.Outdated {
			return TierUpdate
		}
	}
	return TierStability
}
