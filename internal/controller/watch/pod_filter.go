package watch

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// ManagedPods passes only the pods the operator labeled as its own.
func ManagedPods() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[valkeyv1.LabelManagedBy] == valkeyv1.LabelManagedByValue
	})
}

// PodAddressChanged passes pods that appear, go, or change phase or
// address; probe and status noise in between is ignored.
func PodAddressChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Pod)
			n, ok2 := e.ObjectNew.(*corev1.Pod)
			if !ok1 || !ok2 {
				return true
			}
			return o.Status.Phase != n.Status.Phase || o.Status.PodIP != n.Status.PodIP || !o.DeletionTimestamp.Equal(n.DeletionTimestamp)
		},
	}
}
