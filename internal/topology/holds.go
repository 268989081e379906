package topology

import (
	"fmt"
	"strings"
	"time"
)

// ReplacementBackoff is the pacing of node creations after node containers
// exited: Failures of them in a row, and no node is created before Until.
type ReplacementBackoff struct {
	Failures int
	Until    time.Time
}

// holds takes out of a planned wave what the inputs hold back, in turn:
// while the TLS Secret is invalid everything but healing, during a
// replacement backoff every node creation, while the Valkey version check
// fails every creation and every step of a roll, while created nodes are
// missing from the view everything, and last, while the cluster is
// paused, everything the others left. A wave left with nothing
// to run waits on the hold that emptied it; each hold that took something
// out is listed in Wave.Held either way.
func (w *world) holds(wv Wave) Wave {
	if w.in.HoldForTLS {
		// Healing goes on: every node keeps serving the certificate it
		// has mounted, and a replacement mounts the operator's copy of the
		// last valid material, which an invalid Secret never overwrites;
		// waiting would only leave a shard short. Changes (new shards,
		// slot moves, rolls, cleanup) are the user's, and the user is in
		// the middle of changing the material they would start from.
		wv = wv.without(func(a Action) bool {
			return a.Acts() && a.Tier != TierStability
		}, CauseHeldForTLS, ReasonHeldForTLS, func(lead Action) string {
			return fmt.Sprintf("%s (%s)", lead.Kind, lead.Reason)
		})
	}
	if b := w.in.Backoff; w.in.Now.Before(b.Until) {
		// A replacement that would crash like the last ones only adds a
		// failure: each waits twice as long as the one before.
		detail := fmt.Sprintf("%d node container(s) exited in a row; the next node is created at %s",
			b.Failures, b.Until.UTC().Format(time.RFC3339))
		wv = wv.without(func(a Action) bool { return a.Kind == KindCreateNode },
			CauseReplacementBackoff, ReasonReplacementBackoff, func(Action) string { return detail })
	}
	if why := w.in.HoldForVersion; why != "" {
		// A new node would run the wrong version too, and the nodes a roll
		// retires run what their image says. A roll's own waits give way
		// to the hold, so status says why the roll does not go on.
		wv = wv.without(func(a Action) bool { return a.Kind == KindCreateNode || a.Tier == TierUpdate },
			CauseHeldForVersion, ReasonHeldForVersion, func(Action) string { return why })
	}
	if unseen := w.in.Unseen; len(unseen) > 0 {
		// The view lacks nodes already created: any action planned from
		// it could repeat a creation or act on a shard as if short.
		wv = wv.without(Action.Acts, CauseNodesUnseen, ReasonNodesUnseen, func(Action) string { return strings.Join(unseen, ", ") })
	}
	if w.in.Paused {
		// Last, so a wave another hold emptied keeps that hold's wait,
		// which says what a person must fix; the pause is theirs to lift.
		// The first held action is what status says runs on resume.
		wv = wv.without(Action.Acts, CausePaused, ReasonPaused, Action.Describe)
	}
	return wv
}

// without drops the actions hold says to. When none is left, a Wait with
// cause and reason takes their place, in the first held action's tier (a
// roll held back is still an update, a lost node's replacement still a
// repair), its detail from that action. A wave with nothing to drop is
// returned as it is.
func (wv Wave) without(hold func(Action) bool, cause WaitCause, reason string, detail func(first Action) string) Wave {
	kept := make([]Action, 0, len(wv.Actions))
	var first *Action
	for i, a := range wv.Actions {
		if !hold(a) {
			kept = append(kept, a)
		} else if first == nil {
			first = &wv.Actions[i]
		}
	}
	if first == nil {
		return wv
	}
	wait := Action{Kind: KindWait, Tier: first.Tier, Cause: cause, Reason: reason, Detail: detail(*first)}
	if len(kept) == 0 {
		kept = append(kept, wait)
	}
	return Wave{Actions: kept, Held: append(append([]Action(nil), wv.Held...), wait)}
}
