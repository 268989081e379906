package render

import (
	"strconv"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// commonLabels are on every object the operator owns for a cluster: the
// operator lists its objects by instance and recognises them by managed-by.
func commonLabels(cluster string) map[string]string {
	return map[string]string{
		v1alpha1.LabelInstance:  cluster,
		v1alpha1.LabelManagedBy: v1alpha1.LabelManagedByValue,
	}
}

// ManagedSelector selects every object the operator creates for a
// cluster; the operator caches only the Secrets and Pods it selects.
func ManagedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.LabelManagedByValue})
}

// PodLabels are a node's pod labels.
func PodLabels(cluster string, shard int32) map[string]string {
	l := commonLabels(cluster)
	l[v1alpha1.LabelName] = v1alpha1.LabelNameValue
	l[v1alpha1.LabelShardIndex] = shardLabel(shard)
	return l
}

// ClusterSelector selects every pod of a cluster (Service, status.selector).
func ClusterSelector(cluster string) map[string]string {
	return map[string]string{v1alpha1.LabelInstance: cluster}
}

// valkeyPodSelector selects the Valkey pods of one cluster and nothing else
// in its namespace, not another application's pods that happen to carry
// the same instance label.
func valkeyPodSelector(cluster string) map[string]string {
	return map[string]string{
		v1alpha1.LabelInstance:  cluster,
		v1alpha1.LabelManagedBy: v1alpha1.LabelManagedByValue,
		v1alpha1.LabelName:      v1alpha1.LabelNameValue,
	}
}

// shardSelector selects the pods of one shard.
func shardSelector(cluster string, shard int32) map[string]string {
	return map[string]string{v1alpha1.LabelInstance: cluster, v1alpha1.LabelShardIndex: shardLabel(shard)}
}

func shardLabel(shard int32) string { return strconv.Itoa(int(shard)) }
