package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// paused reports whether the cluster's annotation holds its planner.
func paused(vc *valkeyv1.ValkeyCluster) bool {
	return vc.Annotations[valkeyv1.AnnotationPaused] == "true"
}

// applyPause keeps the Paused condition and its Events in step with the
// annotation and reports whether the wave must be held. A held wave still
// shows in Progressing, so the status says what will happen on resume.
func (r *Reconciler) applyPause(ctx context.Context, vc *valkeyv1.ValkeyCluster, wave topology.Wave) bool {
	was := meta.IsStatusConditionTrue(vc.Status.Conditions, valkeyv1.CondPaused)
	if !paused(vc) {
		clusterstatus.SetCondition(vc, valkeyv1.CondPaused, metav1.ConditionFalse, valkeyv1.ReasonNotPaused, "the planner acts")
		if was {
			clusterstatus.LogFrom(ctx).Info("resumed")
			r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonResumed, "Resume",
				"annotation %s removed: the planner acts again", valkeyv1.AnnotationPaused)
		}
		return false
	}
	clusterstatus.SetCondition(vc, valkeyv1.CondPaused, metav1.ConditionTrue, valkeyv1.ReasonPaused,
		fmt.Sprintf("annotation %s=true holds every topology action", valkeyv1.AnnotationPaused))
	if !was {
		clusterstatus.LogFrom(ctx).Info("paused")
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonPaused, "Pause",
			"annotation %s=true: topology actions are held", valkeyv1.AnnotationPaused)
	}
	if !wave.Acts() {
		return false
	}
	clusterstatus.SetCondition(vc, valkeyv1.CondProgressing, metav1.ConditionTrue, valkeyv1.ReasonPaused,
		"paused; next on resume: "+describe(wave.Lead()))
	return true
}
