package render

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// PodDisruptionBudget lets a drain evict at most one pod of a shard at a
// time, so a voluntary disruption never takes a shard's primary and its
// replica together. The documented operator creates none.
//
// The budget is an integer minAvailable, one less than the shard's pods:
// the disruption controller can evaluate maxUnavailable (or a percentage)
// only for pods whose owner has a scale subresource, which ValkeyNodes do
// not have, so such a budget would refuse every eviction and no node
// running a Valkey pod could ever be drained. A shard without replicas
// gets minAvailable 0: it has no second copy to protect.
func (c Cluster) PodDisruptionBudget(shard int32, pods int) *policyv1.PodDisruptionBudget {
	meta := c.clusterMeta(PodDisruptionBudgetName(c.Cluster.Name, shard))
	meta.Labels[v1alpha1.LabelShardIndex] = shardLabel(shard)
	minAvailable := intstr.FromInt32(int32(max(pods-1, 0)))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: meta,
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: ShardSelector(c.Cluster.Name, shard)},
		},
	}
}
