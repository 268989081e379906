package render

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Kinds as registered in the scheme, which names them after the Go types.
var (
	kindCluster = reflect.TypeFor[v1alpha1.ValkeyCluster]().Name()
	kindNode    = reflect.TypeFor[v1alpha1.ValkeyNode]().Name()
)

// controllerRef makes the owner's deletion collect the object, and blocks
// foreground deletion of the owner until it is gone.
func controllerRef(kind string, owner metav1.Object) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion:         v1alpha1.GroupVersion.String(),
		Kind:               kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}
}

// ControllingCluster is the cluster whose controller reference the object
// carries, as a ValkeyCluster with its namespace, name and UID set; nil
// when no cluster controls it.
func ControllingCluster(o metav1.Object) *v1alpha1.ValkeyCluster {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != kindCluster || ref.APIVersion != v1alpha1.GroupVersion.String() {
		return nil
	}
	return &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: ref.Name, UID: ref.UID}}
}

// clusterMeta is the metadata of a cluster-level object.
func (c Cluster) clusterMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Cluster.Namespace,
		Labels:          commonLabels(c.Cluster.Name),
		OwnerReferences: controllerRef(kindCluster, c.Cluster),
	}
}

// nodeMeta is the metadata of an object owned by a ValkeyNode.
func nodeMeta(name string, node *v1alpha1.ValkeyNode) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       node.Namespace,
		Labels:          commonLabels(node.Spec.ClusterName),
		OwnerReferences: controllerRef(kindNode, node),
	}
}
