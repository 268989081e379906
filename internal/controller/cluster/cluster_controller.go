package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrlrt "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/looks"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// Reconciler drives a ValkeyCluster: validate, resolve, render the
// cluster-level objects, observe every node, then act on the planner's
// next wave.
type Reconciler struct {
	ctrl.Client
	// APIReader reads around the cache where a stale answer would be harmful.
	APIReader ctrl.Reader
	Options   options.Options
	Recorder  events.EventRecorder
	// Dialer opens connections to nodes; nil dials directly.
	Dialer nodeconn.DialFunc
	// Pool keeps the nodes' connections between passes; nil dials.
	Pool *valkey.Pool
	// Looks keeps each node's latest INFO answer for the controllers that
	// can use one a moment old; nil keeps none.
	Looks *looks.Store
	// Secrets watches the TLS Secrets clusters reference, which the cache
	// does not hold; nil watches none.
	Secrets *watch.SecretWatches
	// expected holds the nodes created and not yet in the cache.
	expected nodeExpectations
}

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
	result, err := r.reconcile(ctx, &vc)
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

// clusterScope is what one reconcile of a cluster learns, phase by phase:
// each phase reads what the earlier ones set and adds its own.
type clusterScope struct {
	vc *valkeyv1.ValkeyCluster
	rc render.Cluster

	// From the base objects: the system users' passwords.
	passwords render.Passwords

	// From TLS: the check of the user's Secret. While it failed, only
	// healing continues, and nodeCA is the CA the nodes run with.
	tls    tlsCheck
	nodeCA []byte

	// From resolve: the config, image and roles. res is nil when the
	// config chain does not resolve; aclHeld says the ACL Secret keeps
	// what it has because the bindings (or the config) do not resolve.
	res     *resolve.Result
	users   []resolve.User
	aclHeld bool

	// From observe: the nodes, pods and views, how to reach the nodes, and
	// the spec each shard's new nodes get.
	o       *observed
	conn    *nodeconn.Connector
	desired func(shard int32) (valkeyv1.ValkeyNodeSpec, error)

	// From the derived objects: a credentials rotation is under way; what
	// the live settings pass left.
	rotating bool
	live     liveOutcome

	// From plan: what the planner was given and decided, and the nodes
	// whose containers keep failing, with why creations are held.
	creating bool
	in       topology.Input
	wave     topology.Wave
	failures []containerFailure
	held     string
	// versionMismatch says which nodes run another Valkey version than
	// their image declares, or which cannot load the data of a newer
	// primary they were downgraded under; "" when none does.
	// versionReason is the VersionMatches reason that goes with it.
	versionMismatch, versionReason string
}

// phaseResult is how a phase ends: done ends the reconcile with result, as
// an error does; otherwise the next phase runs.
type phaseResult struct {
	done   bool
	result ctrlrt.Result
}

// nextPhase lets the reconcile go on.
var nextPhase = phaseResult{}

// requeueAfter ends the reconcile, to look again after d.
func requeueAfter(d time.Duration) phaseResult {
	return phaseResult{done: true, result: ctrlrt.Result{RequeueAfter: d}}
}

// reconcile runs the phases in order (docs/architecture.md lists them with
// their files). Acting always ends it: it says when to look again.
func (r *Reconciler) reconcile(ctx context.Context, vc *valkeyv1.ValkeyCluster) (ctrlrt.Result, error) {
	if vc.Status.State == "" {
		vc.Status.State = valkeyv1.StateCreating
		vc.Status.TargetSpec = &valkeyv1.TargetTopology{Shards: vc.Spec.Shards, ReplicasPerShard: vc.Spec.ReplicasPerShard}
	}
	s := &clusterScope{vc: vc, rc: render.Cluster{Cluster: vc, ClusterDomain: r.Options.ClusterDomain,
		DefaultZoneSpread: r.Options.DefaultZoneSpread, ExporterImage: r.Options.ExporterImage}}
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
			return pr.result, err
		}
	}
	return r.runWave(ctx, s)
}
