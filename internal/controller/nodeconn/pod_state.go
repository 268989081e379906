package nodeconn

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// PodState reduces a pod to what the planner needs.
func PodState(p *corev1.Pod) topology.Pod {
	if p == nil {
		return topology.Pod{Phase: topology.PodAbsent}
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || valkeyExited(p) {
		return topology.Pod{Phase: topology.PodGone, IP: p.Status.PodIP, Exited: true}
	}
	if !p.DeletionTimestamp.IsZero() {
		if p.Status.Phase == corev1.PodRunning {
			return topology.Pod{Phase: topology.PodStopping, IP: p.Status.PodIP}
		}
		return topology.Pod{Phase: topology.PodGone, IP: p.Status.PodIP}
	}
	if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
		return topology.Pod{Phase: topology.PodRunning, IP: p.Status.PodIP}
	}
	out := topology.Pod{Phase: topology.PodPending, IP: p.Status.PodIP}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			out.Unschedulable = c.Message
		}
	}
	return out
}

// valkeyExited: the kubelet reports the Valkey container terminated in a
// pod that never restarts it. The pod itself may still run (the metrics
// exporter keeps it Running), but the node's process is gone for good.
func valkeyExited(p *corev1.Pod) bool {
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == render.ContainerValkey {
			return cs.State.Terminated != nil
		}
	}
	return false
}
