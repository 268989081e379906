package watch

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// HandedOver passes a cluster update in which another controller wrote
// what the cluster controller acts on: the autoscaler's shard target
// (status.autoscaling.desiredShards) and the restore controller's progress
// (status.restore). The cluster controller does not wake on status writes
// in general, since it makes most of them itself; these two it never
// writes, and without a wake it would take them up only at the cluster's
// safety pass, minutes later.
func HandedOver() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyCluster)
			n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyCluster)
			if !ok1 || !ok2 {
				return false
			}
			return desiredShards(o) != desiredShards(n) || !equality.Semantic.DeepEqual(o.Status.Restore, n.Status.Restore)
		},
		// Creations and deletions pass the cluster controller's other
		// predicates; this one only adds updates.
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// desiredShards is the autoscaler's target, 0 without one.
func desiredShards(vc *valkeyv1.ValkeyCluster) int32 {
	if vc.Status.Autoscaling == nil {
		return 0
	}
	return vc.Status.Autoscaling.DesiredShards
}
