package node

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
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
)

// A persistent node whose pod is gone gets its pod back on its claim, but
// never a new claim: one gone since its first pod took the node's data
// with it, and an empty one would bring the node back without its keys,
// unnoticed. Nor a pod on a claim being deleted, which could never start
// and would keep the claim from going.
func TestBringBackNeverRecreatesTheClaim(t *testing.T) {
	ctx := context.Background()
	scheme, err := apischeme.NewScheme()
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
			node := nodeWithClaim("n1", valkeyv1.LifecycleActive)
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(vc, node)
			if tt.claim != nil {
				b = b.WithObjects(tt.claim.DeepCopy())
			}
			c := b.Build()
			r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10)}
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

// nodeWithClaim is a persistent node whose first pod was made.
func nodeWithClaim(name string, lifecycle valkeyv1.NodeLifecycle) *valkeyv1.ValkeyNode {
	return &valkeyv1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "cache", Lifecycle: lifecycle,
			Persistence: &valkeyv1.NodePersistence{Size: resource.MustParse("1Gi"), Appendfsync: valkeyv1.AppendFsyncAlways}},
		Status: valkeyv1.ValkeyNodeStatus{Conditions: []metav1.Condition{{Type: valkeyv1.CondPodCreated, Status: metav1.ConditionTrue, Reason: valkeyv1.ReasonPodCreated}}},
	}
}
