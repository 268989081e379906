package watch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// InstanceIndex is the cache index of what belongs to one cluster: its
// ValkeyNodes, their pods and claims, and its disruption budgets, keyed by
// the cluster's name (their LabelInstance label). A list by label reads
// every object of the namespace: with a fleet of clusters in one
// namespace, each cluster's look cost as much as the whole fleet's.
const InstanceIndex = "valkey.gomomento.com/instance"

// IndexInstances registers InstanceIndex for every kind listed by cluster.
func IndexInstances(ctx context.Context, indexer client.FieldIndexer) error {
	for _, obj := range []client.Object{&valkeyv1.ValkeyNode{}, &corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &policyv1.PodDisruptionBudget{}} {
		if err := indexer.IndexField(ctx, obj, InstanceIndex, InstanceOf); err != nil {
			return fmt.Errorf("indexing %T by cluster: %w", obj, err)
		}
	}
	return nil
}

// InstanceOf is the index value of obj: the cluster it belongs to.
func InstanceOf(obj client.Object) []string {
	if name := obj.GetLabels()[valkeyv1.LabelInstance]; name != "" {
		return []string{name}
	}
	return nil
}

// OfCluster selects, in a list from the cache, what belongs to the
// cluster name in namespace.
func OfCluster(namespace, name string) []client.ListOption {
	return []client.ListOption{client.InNamespace(namespace), client.MatchingFields{InstanceIndex: name}}
}
