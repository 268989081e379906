package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func persistentNode(name string, lifecycle valkeyv1.NodeLifecycle) *valkeyv1.ValkeyNode {
	return &valkeyv1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "cache", Lifecycle: lifecycle,
			Persistence: &valkeyv1.NodePersistence{Size: resource.MustParse("1Gi"), Appendfsync: valkeyv1.AppendFsyncAlways}},
		Status: valkeyv1.ValkeyNodeStatus{Conditions: []metav1.Condition{{Type: valkeyv1.CondPodCreated, Status: metav1.ConditionTrue, Reason: valkeyv1.ReasonPodCreated}}},
	}
}

// The proof that a persistent node's data is gone is read from the API
// server, never from the cache (here an empty client), and only for a
// node whose pod does not run.
func TestReadStorage(t *testing.T) {
	ctx := context.Background()
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	claim := func(phase corev1.PersistentVolumeClaimPhase, volume string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n1-data"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	pinned := func(host string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
			}}}}}}
	}
	// Its name is not its hostname: the volume names the label.
	worker := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1.internal", Labels: map[string]string{corev1.LabelHostname: "w1"}}}
	runningPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	pendingPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}

	tests := []struct {
		name    string
		node    *valkeyv1.ValkeyNode
		phase   topology.PodPhase
		objects []client.Object
		want    *topology.Storage
	}{
		{"claim deleted", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodPending, nil,
			&topology.Storage{Claim: "n1-data", ClaimPhase: topology.ClaimMissing}},
		{"claim deleted, a pod runs under the node's name", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodPending,
			[]client.Object{runningPod},
			&topology.Storage{PodRuns: true, Claim: "n1-data", ClaimPhase: topology.ClaimMissing}},
		{"claim waiting for its first consumer", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodPending,
			[]client.Object{pendingPod, claim(corev1.ClaimPending, "")},
			&topology.Storage{Claim: "n1-data", ClaimPhase: topology.ClaimPending}},
		{"claim Lost", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodPending,
			[]client.Object{claim(corev1.ClaimLost, "pv-1")},
			&topology.Storage{Claim: "n1-data", ClaimPhase: topology.ClaimLost, Volume: "pv-1"}},
		{"volume deleted", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodPending,
			[]client.Object{claim(corev1.ClaimBound, "pv-1")},
			&topology.Storage{Claim: "n1-data", ClaimPhase: topology.ClaimBound, Volume: "pv-1", VolumeMissing: true}},
		{"volume pinned to a node that exists", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodPending,
			[]client.Object{claim(corev1.ClaimBound, "pv-1"), pinned("w1"), worker},
			&topology.Storage{Claim: "n1-data", ClaimPhase: topology.ClaimBound, Volume: "pv-1", PinnedTo: "w1"}},
		{"volume pinned to a node deleted", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodPending,
			[]client.Object{claim(corev1.ClaimBound, "pv-1"), pinned("w2"), worker},
			&topology.Storage{Claim: "n1-data", ClaimPhase: topology.ClaimBound, Volume: "pv-1", PinnedTo: "w2", PinnedNodeMissing: true}},
		{"pod running: not read", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodRunning, nil, nil},
		{"pod stopping: not read", persistentNode("n1", valkeyv1.LifecycleActive), topology.PodStopping, nil, nil},
		{"being retired: not read", persistentNode("n1", valkeyv1.LifecycleLeaving), topology.PodAbsent, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objects...).Build()
			cache := fakeCache(scheme).Build()
			r := &Reconciler{Client: cache, APIReader: api}
			o := &observed{nodes: map[string]*valkeyv1.ValkeyNode{"n1": tt.node},
				members: []topology.Member{{Name: "n1", Pod: topology.Pod{Phase: tt.phase}}}}
			if err := r.readStorage(ctx, o); err != nil {
				t.Fatal(err)
			}
			got := o.members[0].Storage
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("storage %+v, want %+v", got, tt.want)
			}
		})
	}
}
