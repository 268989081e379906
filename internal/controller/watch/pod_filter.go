package watch

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// ManagedPods passes only the pods the operator labeled as its own.
func ManagedPods() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[valkeyv1.LabelManagedBy] == valkeyv1.LabelManagedByValue
	})
}
