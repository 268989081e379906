package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// missingAnnotations returns the entries of want that the pod lacks or holds
// with another value. Keys the pod has beyond want are left alone: they may
// belong to another controller, so removals wait for the pod's replacement.
func missingAnnotations(have, want map[string]string) map[string]string {
	var out map[string]string
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// ensurePodAnnotations patches spec.podAnnotations onto running pods in
// place, additively: no restart, other controllers' annotations kept.
func (r *Reconciler) ensurePodAnnotations(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed) error {
	for name, pod := range o.pods {
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		add := missingAnnotations(pod.Annotations, vc.Spec.PodAnnotations)
		if len(add) == 0 {
			continue
		}
		patch := client.MergeFrom(pod.DeepCopy())
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		for k, v := range add {
			pod.Annotations[k] = v
		}
		if err := r.Patch(ctx, pod, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("annotating pod %s: %w", name, err)
		}
	}
	return nil
}
