package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

// A persistent node whose pod is gone gets its pod back on its claim, but
// never a new claim: one gone since its first pod took the node's data
// with it, and an empty one would bring the node back without its keys,
// unnoticed. Nor a pod on a claim being deleted, which could never start
// and would keep the claim from going.
func TestBringBackNeverRecreatesTheClaim(t *testing.T) {
	ctx := context.Background()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n1-data"}}
	deleting := claim.DeepCopy()
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"kubernetes.io/pvc-protection"}
	tests := []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		wantPod bool
	}{
		{"claim there: the pod comes back on it", claim, true},
		{"claim gone: no claim, no pod", nil, false},
		{"claim being deleted: no pod", deleting, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache"}}
			node := persistentNode("n1", valkeyv1.LifecycleActive)
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(vc, node)
			if tt.claim != nil {
				b = b.WithObjects(tt.claim.DeepCopy())
			}
			c := b.Build()
			r := &nodeReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10)}
			if err := r.bringBack(ctx, node); err != nil {
				t.Fatal(err)
			}
			var pod corev1.Pod
			err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "n1"}, &pod)
			if gotPod := err == nil; gotPod != tt.wantPod {
				t.Errorf("pod created: %v (%v), want %v", gotPod, err, tt.wantPod)
			}
			var claims corev1.PersistentVolumeClaimList
			if err := c.List(ctx, &claims); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.claim != nil]; len(claims.Items) != want {
				t.Errorf("%d claims, want %d: a claim was created again", len(claims.Items), want)
			}
		})
	}
}
