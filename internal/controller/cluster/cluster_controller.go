package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlrt "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/render"
)

func (r *Reconciler) Reconcile(ctx context.Context, req ctrlrt.Request) (ctrlrt.Result, error) {
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, req.NamespacedName, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Secrets.Refer(req.NamespacedName, "")
			r.Looks.Forget(req.NamespacedName)
		}
		return ctrlrt.Result{}, ctrl.IgnoreNotFound(err)
	}
	log := logf.FromContext(ctx).WithValues("cluster", vc.Name, "namespace", vc.Namespace)
	ctx = logf.IntoContext(ctx, log)

	if !vc.DeletionTimestamp.IsZero() {
		r.Secrets.Refer(req.NamespacedName, "")
		return r.finalize(ctx, &vc)
	}
	tlsSecret := ""
	if vc.Spec.TLS != nil {
		tlsSecret = vc.Spec.TLS.SecretRef
	}
	r.Secrets.Refer(req.NamespacedName, tlsSecret)
	if !controllerutil.ContainsFinalizer(&vc, valkeyv1.FinalizerCluster) {
		patch := ctrl.MergeFrom(vc.DeepCopy())
		controllerutil.AddFinalizer(&vc, valkeyv1.FinalizerCluster)
		if err := r.Patch(ctx, &vc, patch); err != nil {
			return ctrlrt.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}

	before := vc.DeepCopy()
	result, found, err := r.reconcile(ctx, &vc)
	// The phases only recorded what they found: the status is built once,
	// from the status as read and those findings.
	prev := vc.Status
	vc.Status = clusterStatus(prev, vc.Generation, found)
	r.noteInvalid(ctx, &vc, prev)
	// The reconcile's own writes to the cluster object are optimistically
	// locked, so a newer resourceVersion here is ours alone.
	before.ResourceVersion = vc.ResourceVersion
	clusterstatus.SettleGeneration(&vc, err == nil)
	metrics.RecordCluster(&vc)
	if !equality.Semantic.DeepEqual(before.Status, vc.Status) {
		// The TLS reloader writes its own condition; the optimistic lock makes
		// this patch fail rather than write back a stale copy of it.
		perr := r.Status().Patch(ctx, &vc, ctrl.MergeFromWithOptions(before, ctrl.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(perr) && err == nil {
			return ctrlrt.Result{RequeueAfter: afterAction}, nil
		}
		if perr != nil {
			return ctrlrt.Result{}, errors.Join(err, fmt.Errorf("writing status: %w", perr))
		}
		r.noteStateChange(ctx, before.Status.State, &vc)
	}
	if err != nil {
		// The rate limiter backs off per cluster (see the root package's errorBackoff).
		return ctrlrt.Result{}, err
	}
	return result, nil
}

// reconcile runs the phases in order (docs/architecture.md lists them with
// their files). Acting always ends it: it says when to look again. It
// writes nothing to the status but the start of a cluster never reconciled
// (Creating, with bootstrap's snapshot of the shape), which the phases read
// as the status they began from; it returns what the status should report.
func (r *Reconciler) reconcile(ctx context.Context, vc *valkeyv1.ValkeyCluster) (ctrlrt.Result, findings, error) {
	if vc.Status.State == "" {
		vc.Status.State = valkeyv1.StateCreating
		vc.Status.TargetSpec = &valkeyv1.TargetTopology{Shards: vc.Spec.Shards, ReplicasPerShard: vc.Spec.ReplicasPerShard}
	}
	s := &clusterScope{vc: vc, rc: render.Cluster{Cluster: vc, ClusterDomain: r.Options.ClusterDomain,
		DefaultZoneSpread: r.Options.DefaultZoneSpread, ExporterImage: r.Options.ExporterImage},
		found: findings{now: metav1.NewTime(time.Now())}}
	for _, phase := range []func(context.Context, *clusterScope) (phaseResult, error){
		r.ensureBaseObjects,
		r.reconcileTLS,
		r.resolveConfig,
		r.observe,
		r.ensureDerivedObjects,
		r.plan,
		r.report,
	} {
		if pr, err := phase(ctx, s); pr.done || err != nil {
			return pr.result, s.found, err
		}
	}
	result, err := r.runWave(ctx, s)
	return result, s.found, err
}
