package topology

import "strings"

// Wave is one tick's decision: every action that is safe to run now. The
// actions of a wave never depend on each other's outcome, so the executor
// may run them in any order or all at once, and observes once before
// planning again. A wave holds either actions, or exactly one Wait or Done.
//
// What a wave never holds: two actions on the roles of one shard (a
// failover and a replicate), two moves of one slot, more than one shard of
// a roll, a forget of a node whose pod still runs. Steps that cannot be
// widened safely (failovers, rolls, departures, cleanup) keep returning one
// action, so those guarantees are the steps' own.
type Wave struct {
	Actions []Action
	// Held lists, one Wait each, the holds of the input (Input.HoldForTLS,
	// Input.Backoff, Input.HoldForVersion, Input.Unseen, Input.Paused) that
	// took actions out of this wave, whether other actions go on or the
	// wave waits on one of them.
	// The held actions themselves are not in the wave: they are not to
	// run.
	Held []Action
}

// Lead is the wave's first action. Every action of a wave comes from one
// step, so the lead's tier and reason describe the whole wave in status.
func (w Wave) Lead() Action {
	if len(w.Actions) == 0 {
		return wait(TierSteady, "waiting for the cluster to settle", "")
	}
	return w.Actions[0]
}

// HeldBy is the wait of the hold with cause c, when that hold took
// something out of the wave.
func (w Wave) HeldBy(c WaitCause) (Action, bool) {
	for _, h := range w.Held {
		if h.Cause == c {
			return h, true
		}
	}
	return Action{}, false
}

// Done reports whether there is nothing left to do.
func (w Wave) Done() bool { return w.Lead().Kind == KindDone }

// Acts reports whether the wave changes anything (it is neither a Wait nor
// Done).
func (w Wave) Acts() bool { return w.Lead().Acts() }

// String renders the wave one action per "; ", for logs and tests.
func (w Wave) String() string {
	parts := make([]string, len(w.Actions))
	for i, a := range w.Actions {
		parts[i] = a.String()
	}
	return strings.Join(parts, "; ")
}

func waveOf(as ...Action) Wave { return Wave{Actions: as} }
