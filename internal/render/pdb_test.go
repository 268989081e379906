package render

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPodDisruptionBudget(t *testing.T) {
	for _, tt := range []struct {
		name         string
		pods         int
		minAvailable int32
	}{
		{"no replica: nothing to protect", 1, 0},
		{"one replica", 2, 1},
		{"two replicas", 3, 2},
		{"one replica and a replacement joining", 3, 2},
		{"no pod", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			minAvailable := intstr.FromInt32(tt.minAvailable)
			want := &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{
					Name: "my-cluster-shard-2", Namespace: testNamespace, OwnerReferences: clusterOwner(),
					Labels: map[string]string{
						"app.kubernetes.io/instance":       testClusterName,
						"app.kubernetes.io/managed-by":     "valkey-operator",
						"valkey.gomomento.com/shard-index": "2",
					},
				},
				// Never maxUnavailable: see PodDisruptionBudget.
				Spec: policyv1.PodDisruptionBudgetSpec{
					MinAvailable: &minAvailable,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
						"app.kubernetes.io/instance":       testClusterName,
						"valkey.gomomento.com/shard-index": "2",
					}},
				},
			}
			assertEqual(t, testCluster(false).PodDisruptionBudget(2, tt.pods), want)
		})
	}
}
