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
func (c Cluster) PodDisruptionBudget(shard int32) *policyv1.PodDisruptionBudget {
	meta := c.clusterMeta(PodDisruptionBudgetName(c.Cluster.Name, shard))
	meta.Labels[v1alpha1.LabelShardIndex] = shardLabel(shard)
	maxUnavailable := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: meta,
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &maxUnavailable,
			Selector:       &metav1.LabelSelector{MatchLabels: ShardSelector(c.Cluster.Name, shard)},
		},
	}
}
