package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// readMissingPods reads, around the cache, the pod of every node the
// cache has no pod for. The cache holds only pods that carry the
// operator's labels, so a pod someone relabelled looks exactly like a pod
// that is gone; the planner takes an absent pod as a dead process, and a
// dead primary without a replica is forgotten with its keys. Only the API
// server's own answer that the pod does not exist makes it absent.
func (r *Reconciler) readMissingPods(ctx context.Context, o *observed) error {
	for _, name := range o.names() {
		if _, ok := o.pods[name]; ok {
			continue
		}
		node := o.nodes[name]
		var pod corev1.Pod
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: name}, &pod)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("reading pod %s around the cache: %w", name, err)
		}
		if !metav1.IsControlledBy(&pod, node) {
			// Not the node's pod (the node controller cannot create its
			// own while it exists): nothing of the node runs there.
			continue
		}
		o.pods[name] = &pod
		o.relabelled = append(o.relabelled, name)
	}
	return nil
}

// restorePodLabels puts the operator's labels back on the pods that lost
// them, so the cache, the Service and the PodDisruptionBudgets find them
// again, and says so in an Event: whoever removed them should know it was
// undone, and why.
func (r *Reconciler) restorePodLabels(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed) error {
	for _, name := range o.relabelled {
		pod := o.pods[name]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		want := render.PodLabels(vc.Name, o.nodes[name].Spec.ShardIndex)
		missing := map[string]string{}
		for k, v := range want {
			if pod.Labels[k] != v {
				missing[k] = v
			}
		}
		if len(missing) == 0 {
			continue
		}
		patch := client.MergeFrom(pod.DeepCopy())
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		maps.Copy(pod.Labels, missing)
		if err := r.Patch(ctx, pod, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("restoring the labels of pod %s: %w", name, err)
		}
		r.Recorder.Eventf(vc, pod, corev1.EventTypeWarning, valkeyv1.ReasonPodLabelsRestored, "RestoreLabels",
			"pod %s had lost the operator's labels %v; they are restored (the operator finds its pods by them, and never takes a relabelled pod for a dead one)",
			name, slices.Sorted(maps.Keys(missing)))
	}
	return nil
}
