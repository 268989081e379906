package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// ExpandClaim raises the node's claim to the size the cluster recorded on
// the node; the StorageClass's resizer does the rest, with the pod running.
// A claim not bound yet cannot be resized: its binding brings the node
// back here. Exported for the cluster package's volume-size test, which
// drives both halves: the size recorded on the node, then the claim.
func (r *Reconciler) ExpandClaim(ctx context.Context, node *valkeyv1.ValkeyNode) error {
	p := node.Spec.Persistence
	if p == nil || node.Spec.Lifecycle == valkeyv1.LifecycleLeaving {
		return nil
	}
	var pvc corev1.PersistentVolumeClaim
	switch err := r.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: render.NodeClaimName(node.Name)}, &pvc); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading claim of node %s: %w", node.Name, err)
	}
	request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if pvc.Status.Phase != corev1.ClaimBound || request.Cmp(p.Size) >= 0 {
		return nil
	}
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = p.Size.DeepCopy()
	if err := r.Patch(ctx, &pvc, patch); err != nil {
		return fmt.Errorf("expanding claim %s to %s: %w", pvc.Name, p.Size.String(), err)
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.ReasonVolumesExpanding, "ExpandClaim",
		"claim %s asked for %s (was %s)", pvc.Name, p.Size.String(), request.String())
	return nil
}
