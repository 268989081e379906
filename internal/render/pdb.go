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
// pods is the shard's size, 1 + replicasPerShard (more while a replacement
// joins), and the budget an integer minAvailable one less than that, so
// replicasPerShard in a steady shard. Why an integer: the disruption
// controller can evaluate maxUnavailable (or a percentage minAvailable)
// only for pods whose controller has a scale subresource, from which it
// reads how many pods to expect. The pods' controller here is a
// ValkeyNode, which has none, so such a budget stays at
// disruptionsAllowed 0, the eviction API refuses every eviction and no
// node running a Valkey pod can ever be drained. An integer minAvailable
// needs no expected count: Ready pods of the shard minus minAvailable may
// go. A shard without replicas gets minAvailable 0: it has no second copy
// to protect, and evicting its primary is the documented loss of a primary
// without a replica.
func (c Cluster) PodDisruptionBudget(shard int32, pods int) *policyv1.PodDisruptionBudget {
	meta := c.clusterMeta(PodDisruptionBudgetName(c.Cluster.Name, shard))
	meta.Labels[v1alpha1.LabelShardIndex] = shardLabel(shard)
	minAvailable := intstr.FromInt32(int32(max(pods-1, 0)))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: meta,
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: shardSelector(c.Cluster.Name, shard)},
		},
	}
}
