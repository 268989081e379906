package autoscaler

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
)

func (r *autoscaler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, req.NamespacedName, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vc.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx).WithValues("cluster", vc.Name, "namespace", vc.Namespace)
	ctx = logf.IntoContext(ctx, log)
	interval := r.interval()

	var list valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &list, watch.OfCluster(vc.Namespace, vc.Name)...); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	nodes := make([]*valkeyv1.ValkeyNode, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}

	next := interval
	// Autoscaling just turned on decides from every sample: those kept
	// unwritten are written first.
	owed := vc.Spec.Autoscaling != nil && r.unwritten(req.NamespacedName, nodes)
	if due, wait := r.due(req.NamespacedName, interval); due || owed {
		if err := r.sample(ctx, &vc, nodes); err != nil {
			// A cluster that cannot be sampled yet (no Secret, no pod) is
			// retried on the tick; the decision runs on what status holds.
			log.V(1).Info("sampling failed", "error", err.Error())
		}
	} else {
		next = wait
	}
	if err := r.evaluate(ctx, req.NamespacedName, nodes); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: next}, nil
}
