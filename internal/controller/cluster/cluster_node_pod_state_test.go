package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// A persistent node's pod that is gone is coming back on its claim: the
// planner must see it pending, not lost. A node in memory only, one being
// retired and one whose first pod was never made are as before.
func TestNodePodState(t *testing.T) {
	now := metav1.Now()
	running := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}}
	failed := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, PodIP: "10.0.0.1"}}
	stopped := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	stopping := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}}
	node := func(persistent bool, lifecycle valkeyv1.NodeLifecycle, created bool) *valkeyv1.ValkeyNode {
		n := &valkeyv1.ValkeyNode{Spec: valkeyv1.ValkeyNodeSpec{Lifecycle: lifecycle}}
		if persistent {
			n.Spec.Persistence = &valkeyv1.NodePersistence{Size: resource.MustParse("1Gi"), Appendfsync: valkeyv1.AppendFsyncAlways}
		}
		if created {
			n.Status.Conditions = []metav1.Condition{{Type: valkeyv1.CondPodCreated, Status: metav1.ConditionTrue, Reason: valkeyv1.ReasonPodCreated}}
		}
		return n
	}
	tests := []struct {
		name string
		node *valkeyv1.ValkeyNode
		pod  *corev1.Pod
		want topology.PodPhase
	}{
		{"in memory, pod deleted: lost", node(false, valkeyv1.LifecycleActive, true), nil, topology.PodAbsent},
		{"in memory, pod failed: lost", node(false, valkeyv1.LifecycleActive, true), failed, topology.PodGone},
		{"persistent, pod deleted: coming back", node(true, valkeyv1.LifecycleActive, true), nil, topology.PodPending},
		{"persistent, pod evicted: coming back", node(true, valkeyv1.LifecycleActive, true), failed, topology.PodPending},
		{"persistent, pod stopped while deleted: coming back", node(true, valkeyv1.LifecycleActive, true), stopped, topology.PodPending},
		{"persistent, pod still stopping: stopping", node(true, valkeyv1.LifecycleActive, true), stopping, topology.PodStopping},
		{"persistent, running", node(true, valkeyv1.LifecycleActive, true), running, topology.PodRunning},
		{"persistent, being retired: lost", node(true, valkeyv1.LifecycleLeaving, true), nil, topology.PodAbsent},
		{"persistent, first pod not made yet", node(true, valkeyv1.LifecycleJoining, false), nil, topology.PodAbsent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodePodState(tt.node, tt.pod).Phase; got != tt.want {
				t.Errorf("phase %q, want %q", got, tt.want)
			}
		})
	}
}
