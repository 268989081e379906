package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// syncedCondition is the readiness gate a member's pod should carry, and
// false when this tick says nothing about it (the node did not answer):
// the last verdict then stands rather than flapping on a missed probe.
// Only a node holding its shard's data counts as available, so that a
// PodDisruptionBudget never lets the primary go while its replica is
// still empty.
func syncedCondition(m topology.Member) (corev1.PodCondition, bool) {
	v := m.View
	if v == nil {
		return corev1.PodCondition{}, false
	}
	c := corev1.PodCondition{Type: valkeyv1.ConditionSynced, Status: corev1.ConditionFalse}
	switch {
	case v.Role == topology.RolePrimary:
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, valkeyv1.ReasonSynced, "serves as a primary"
	case v.Role != topology.RoleReplica || v.PrimaryID == "":
		c.Reason, c.Message = valkeyv1.ReasonNoPrimary, "follows no primary yet"
	case !v.LinkUp:
		c.Reason, c.Message = valkeyv1.ReasonLinkDown, "not connected to its primary (sync not started, or the link dropped)"
	case !v.SyncDone:
		c.Reason, c.Message = valkeyv1.ReasonSyncing, "initial sync from its primary in progress"
	default:
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, valkeyv1.ReasonSynced, "replica in sync with its primary"
	}
	return c, true
}

// ensurePodReadiness writes each observed member's synced condition onto
// its pod when it changed. A strategic merge patch by condition type
// leaves the kubelet's conditions alone.
func (r *Reconciler) ensurePodReadiness(ctx context.Context, o *observed) error {
	for _, m := range o.members {
		pod := o.pods[m.Name]
		if pod == nil || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		want, ok := syncedCondition(m)
		if !ok || samePodCondition(pod.Status.Conditions, want) {
			continue
		}
		patch := client.StrategicMergeFrom(pod.DeepCopy())
		want.LastTransitionTime = metav1.Now()
		setPodCondition(pod, want)
		if err := r.Status().Patch(ctx, pod, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("setting %s on pod %s: %w", valkeyv1.ConditionSynced, m.Name, err)
		}
	}
	return nil
}

func samePodCondition(have []corev1.PodCondition, want corev1.PodCondition) bool {
	for _, c := range have {
		if c.Type == want.Type {
			return c.Status == want.Status && c.Reason == want.Reason
		}
	}
	return false
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			if pod.Status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = pod.Status.Conditions[i].LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
