package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
)

// paused reports whether the cluster's annotation holds its planner.
func paused(vc *valkeyv1.ValkeyCluster) bool {
	return vc.Annotations[valkeyv1.AnnotationPaused] == "true"
}

// applyPause records the pause, sends its Events when the annotation
// comes or goes, and reports whether the wave must be held. A held wave
// still shows in Progressing, so the status says what will happen on
// resume.
func (r *Reconciler) applyPause(ctx context.Context, s *clusterScope) bool {
	vc, w := s.vc, &waveFinding{paused: paused(s.vc)}
	s.found.wave = w
	was := meta.IsStatusConditionTrue(vc.Status.Conditions, valkeyv1.CondPaused)
	if !paused(vc) {
		if was {
			clusterstatus.LogFrom(ctx).Info("resumed")
			r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonResumed, "Resume",
				"annotation %s removed: the planner acts again", valkeyv1.AnnotationPaused)
		}
		return false
	}
	if !was {
		clusterstatus.LogFrom(ctx).Info("paused")
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonPaused, "Pause",
			"annotation %s=true: topology actions are held", valkeyv1.AnnotationPaused)
	}
	if !s.wave.Acts() {
		return false
	}
	lead := s.wave.Lead()
	w.heldLead = &lead
	return true
}
