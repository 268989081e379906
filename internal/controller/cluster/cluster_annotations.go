package cluster

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// missingAnnotations returns the entries of want (labels or annotations)
// that the pod lacks or holds
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

// ensurePodMetadata patches the pod labels and annotations of the config
// (spec.pod) and the cluster (podLabels, podAnnotations) onto running pods
// in place, additively: no restart, the same pods, other controllers'
// labels and annotations kept. Without a resolved config only the
// cluster's are applied; the config's stay as they are.
func (r *Reconciler) ensurePodMetadata(ctx context.Context, s *clusterScope) error {
	var cfgLabels, cfgAnnotations map[string]string
	if s.res != nil && s.res.Pod != nil {
		cfgLabels, cfgAnnotations = valkeyv1.LabelMap(s.res.Pod.Labels), s.res.Pod.Annotations
	}
	labels, annotations := s.rc.PodMetadata(cfgLabels, cfgAnnotations)
	for name, pod := range s.o.pods {
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		addLabels := missingAnnotations(pod.Labels, labels)
		addAnnotations := missingAnnotations(pod.Annotations, annotations)
		if len(addLabels) == 0 && len(addAnnotations) == 0 {
			continue
		}
		patch := client.MergeFrom(pod.DeepCopy())
		if pod.Labels == nil && len(addLabels) > 0 {
			pod.Labels = map[string]string{}
		}
		maps.Copy(pod.Labels, addLabels)
		if pod.Annotations == nil && len(addAnnotations) > 0 {
			pod.Annotations = map[string]string{}
		}
		maps.Copy(pod.Annotations, addAnnotations)
		if err := r.Patch(ctx, pod, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("labelling and annotating pod %s: %w", name, err)
		}
	}
	return nil
}
