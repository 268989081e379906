package cluster

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

// backoff is the record as the planner's input: the planner holds node
// creations until next.
func (rec replacementRecord) backoff() topology.ReplacementBackoff {
	return topology.ReplacementBackoff{Failures: rec.Failures, Until: rec.next()}
}

// settled is the record to keep once the wave is planned: a converged
// cluster starts over. A hold never makes a wave Done nor keeps one from
// it, so the backoff the plan was given does not bear on this.
func (rec replacementRecord) settled(wave topology.Wave) replacementRecord {
	if wave.Done() {
		return replacementRecord{}
	}
	return rec
}

// backoffHeld is what ContainersHealthy says of the backoff: the planner's
// word when it held a node creation back this tick, whether the wave
// waits on it or other actions go on; "" otherwise.
func backoffHeld(wave topology.Wave) string {
	if h, ok := wave.HeldBy(topology.CauseReplacementBackoff); ok {
		return h.Detail
	}
	return ""
}

// replacementRecordOf reads the cluster's record. One that does not parse
// is dropped: the worst is one hot replacement more.
func replacementRecordOf(vc *valkeyv1.ValkeyCluster) replacementRecord {
	var rec replacementRecord
	if raw := vc.Annotations[valkeyv1.AnnotationReplacementBackoff]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &rec)
	}
	return rec
}

// countFailures folds this tick's exited containers into the record and
// forgets counted nodes that are gone.
func countFailures(rec replacementRecord, failures []containerFailure, nodes map[string]*valkeyv1.ValkeyNode, now time.Time) replacementRecord {
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

// writeReplacementRecord keeps the record in the cluster's annotation, so
// an operator restart keeps it; an empty record removes the annotation.
func (r *Reconciler) writeReplacementRecord(ctx context.Context, vc *valkeyv1.ValkeyCluster, rec replacementRecord) error {
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
