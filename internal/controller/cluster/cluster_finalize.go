package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlrt "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
)

// finalize deletes the cluster's nodes and waits for them to go; the other
// objects follow through owner references.
func (r *Reconciler) finalize(ctx context.Context, vc *valkeyv1.ValkeyCluster) (ctrlrt.Result, error) {
	if !controllerutil.ContainsFinalizer(vc, valkeyv1.FinalizerCluster) {
		return ctrlrt.Result{}, nil
	}
	var nodes valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &nodes, watch.OfCluster(vc.Namespace, vc.Name)...); err != nil {
		return ctrlrt.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		if err := r.Delete(ctx, &nodes.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return ctrlrt.Result{}, fmt.Errorf("deleting node %s: %w", nodes.Items[i].Name, err)
		}
	}
	if len(nodes.Items) > 0 {
		return ctrlrt.Result{RequeueAfter: r.Options.PendingRequeue}, nil
	}
	if err := r.releaseCredentials(ctx, vc); err != nil {
		return ctrlrt.Result{}, err
	}
	patch := client.MergeFrom(vc.DeepCopy())
	controllerutil.RemoveFinalizer(vc, valkeyv1.FinalizerCluster)
	if err := r.Patch(ctx, vc, patch); err != nil {
		return ctrlrt.Result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	metrics.ForgetCluster(vc.Namespace, vc.Name)
	return ctrlrt.Result{}, nil
}
