package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
)

// paused reports whether the cluster's annotation holds its planner
// (topology.Input.Paused).
func paused(vc *valkeyv1.ValkeyCluster) bool {
	return vc.Annotations[valkeyv1.AnnotationPaused] == "true"
}

// notePause sends the pause's Events when the annotation comes or goes.
// The planner holds the wave itself; its wait says what runs on resume.
func (r *Reconciler) notePause(ctx context.Context, vc *valkeyv1.ValkeyCluster) {
	was := meta.IsStatusConditionTrue(vc.Status.Conditions, valkeyv1.CondPaused)
	switch {
	case paused(vc) && !was:
		clusterstatus.LogFrom(ctx).Info("paused")
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonPaused, "Pause",
			"annotation %s=true: topology actions are held", valkeyv1.AnnotationPaused)
	case !paused(vc) && was:
		clusterstatus.LogFrom(ctx).Info("resumed")
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonResumed, "Resume",
			"annotation %s removed: the planner acts again", valkeyv1.AnnotationPaused)
	}
}
