package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// reasonBackoffWait is the planner-style reason of the wait that replaces
// held node creations.
const reasonBackoffWait = "replacements back off after repeated container failures"

// The first replacement of a failed node is immediate: one crash should
// cost as little as possible. From the second failure in a row each
// replacement waits twice as long, from replacementBackoffBase up to
// replacementBackoffMax, as the kubelet's CrashLoopBackOff does.
const (
	replacementBackoffBase = 10 * time.Second
	replacementBackoffMax  = 5 * time.Minute
)

type replacementRecord struct {
	// Failures is how many node containers exited since the cluster was
	// last converged.
	Failures int       `json:"failures"`
	Last     time.Time `json:"last"`
	// Counted names the failed nodes already counted that still exist, so
	// one failure is counted once however many reconciles see it.
	Counted []string `json:"counted,omitempty"`
}

func (rec replacementRecord) delay() time.Duration {
	if rec.Failures < 2 {
		return 0
	}
	d := replacementBackoffBase
	for i := 2; i < rec.Failures && d < replacementBackoffMax; i++ {
		d *= 2
	}
	return min(d, replacementBackoffMax)
}

// next is when the next node may be created.
func (rec replacementRecord) next() time.Time { return rec.Last.Add(rec.delay()) }

// countFailures folds this tick's exited containers into the record and
// forgets counted nodes that are gone; converged resets it.
func countFailures(rec replacementRecord, failures []containerFailure, nodes map[string]*valkeyv1.ValkeyNode, converged bool, now time.Time) replacementRecord {
	if converged {
		return replacementRecord{}
	}
	out := replacementRecord{Failures: rec.Failures, Last: rec.Last}
	for _, n := range rec.Counted {
		if _, ok := nodes[n]; ok {
			out.Counted = append(out.Counted, n)
		}
	}
	for _, f := range failures {
		if !f.exited || slices.Contains(out.Counted, f.node) {
			continue
		}
		out.Failures++
		out.Last = now
		out.Counted = append(out.Counted, f.node)
	}
	slices.Sort(out.Counted)
	return out
}

// holdCreations drops the wave's node creations while the backoff runs,
// leaving a wait in their place if nothing else is left. It returns the
// message that says so, or "" when nothing is held.
func holdCreations(wave topology.Wave, rec replacementRecord, now time.Time) (topology.Wave, string) {
	next := rec.next()
	if !now.Before(next) {
		return wave, ""
	}
	msg := fmt.Sprintf("%d node container(s) exited in a row; the next node is created at %s", rec.Failures, next.UTC().Format(time.RFC3339))
	held, ok := withoutActions(wave, isCreation, topology.CauseReplacementBackoff, reasonBackoffWait, msg)
	if !ok {
		return wave, ""
	}
	return held, msg
}

func isCreation(a topology.Action) bool { return a.Kind == topology.KindCreateNode }

// withoutActions drops the wave's actions that hold says to, leaving a
// wait with cause, reason and detail in their place if nothing else is
// left. ok is false when the wave had none to drop.
func withoutActions(wave topology.Wave, hold func(topology.Action) bool, cause topology.WaitCause, reason, detail string) (topology.Wave, bool) {
	kept := make([]topology.Action, 0, len(wave.Actions))
	// The wait takes the held action's tier: a roll held back is still an
	// update, a lost node's replacement still a repair.
	tier := topology.TierStability
	for _, a := range wave.Actions {
		if !hold(a) {
			kept = append(kept, a)
		} else if len(kept) == 0 {
			tier = a.Tier
		}
	}
	if len(kept) == len(wave.Actions) {
		return wave, false
	}
	if len(kept) == 0 {
		kept = append(kept, topology.Action{Kind: topology.KindWait, Tier: tier, Cause: cause, Reason: reason, Detail: detail})
	}
	return topology.Wave{Actions: kept}, true
}

// backOffReplacements updates the cluster's replacement record from this
// tick's failures and holds the wave's node creations while it says so.
func (r *ClusterReconciler) backOffReplacements(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed, failures []containerFailure, wave topology.Wave) (topology.Wave, string, error) {
	var rec replacementRecord
	if raw := vc.Annotations[valkeyv1.AnnotationReplacementBackoff]; raw != "" {
		// A record that does not parse is dropped: the worst is one hot
		// replacement more.
		_ = json.Unmarshal([]byte(raw), &rec)
	}
	now := time.Now()
	updated := countFailures(rec, failures, o.nodes, wave.Done(), now)
	if err := r.writeReplacementRecord(ctx, vc, updated); err != nil {
		return wave, "", err
	}
	held, msg := holdCreations(wave, updated, now)
	return held, msg, nil
}

func (r *ClusterReconciler) writeReplacementRecord(ctx context.Context, vc *valkeyv1.ValkeyCluster, rec replacementRecord) error {
	want := ""
	if rec.Failures > 0 {
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encoding the replacement record: %w", err)
		}
		want = string(b)
	}
	if vc.Annotations[valkeyv1.AnnotationReplacementBackoff] == want {
		return nil
	}
	// Patched on a copy: the reply would overwrite the status this
	// reconcile is still building in vc. Under the optimistic lock, so that
	// success proves nobody else wrote the cluster since it was read and
	// the status patch may carry on from the new resourceVersion.
	cp := vc.DeepCopy()
	patch := client.MergeFromWithOptions(cp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if want == "" {
		delete(cp.Annotations, valkeyv1.AnnotationReplacementBackoff)
	} else {
		if cp.Annotations == nil {
			cp.Annotations = map[string]string{}
		}
		cp.Annotations[valkeyv1.AnnotationReplacementBackoff] = want
	}
	if err := r.Patch(ctx, cp, patch); err != nil {
		return fmt.Errorf("recording replacement backoff: %w", err)
	}
	vc.Annotations = cp.Annotations
	vc.ResourceVersion = cp.ResourceVersion
	return nil
}
