package clusterstatus

import (
	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// SettleGeneration stamps what a reconcile observed. Only a reconcile that
// succeeded may claim the current generation: after a failure a reader
// comparing observedGeneration with metadata.generation must see that the
// spec has not been acted on, so the status and every condition keep the
// generation of the last success (a condition set during the failed pass
// still says what it says, against the spec it was last acted on for).
func SettleGeneration(vc *valkeyv1.ValkeyCluster, succeeded bool) {
	if succeeded {
		vc.Status.ObservedGeneration = vc.Generation
		for i := range vc.Status.Conditions {
			vc.Status.Conditions[i].ObservedGeneration = vc.Generation
		}
		return
	}
	last := vc.Status.ObservedGeneration
	for i := range vc.Status.Conditions {
		if vc.Status.Conditions[i].ObservedGeneration > last {
			vc.Status.Conditions[i].ObservedGeneration = last
		}
	}
}
