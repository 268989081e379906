package watch

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// The TLS and ACL reloaders watch the same way: an object labelled with its
// cluster wakes that cluster, and a cluster update wakes them only when it
// can change what they do or undid the condition they own (the cluster
// controller's status patches replace the whole condition list).

// ToCluster enqueues the cluster named by an object's instance label when
// named(cluster) is "" or the object's name.
func ToCluster(named func(cluster string) string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[valkeyv1.LabelInstance]
		if name == "" {
			return nil
		}
		if want := named(name); want != "" && o.GetName() != want {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
}

// AnyName matches every object of the cluster.
func AnyName(string) string { return "" }

// ClusterChangedFor passes cluster updates that change the generation, the
// state or deletion, the condition cond, or what same reports as different.
func ClusterChangedFor(cond string, same func(o, n *valkeyv1.ValkeyCluster) bool) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyCluster)
			n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyCluster)
			if !ok1 || !ok2 {
				return true
			}
			return o.Generation != n.Generation || o.Status.State != n.Status.State ||
				!o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
				!sameCondition(o, n, cond) || (same != nil && !same(o, n))
		},
	}
}

func sameCondition(a, b *valkeyv1.ValkeyCluster, cond string) bool {
	ca := meta.FindStatusCondition(a.Status.Conditions, cond)
	cb := meta.FindStatusCondition(b.Status.Conditions, cond)
	if ca == nil || cb == nil {
		return ca == cb
	}
	return ca.Status == cb.Status && ca.Reason == cb.Reason && ca.Message == cb.Message
}
