package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrlrt "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// ClusterReconciler drives a ValkeyCluster: validate, resolve, render the
// cluster-level objects, observe every node, then perform the planner's
// single next action.
type ClusterReconciler struct {
	ctrl.Client
	// APIReader reads around the cache where a stale answer would be harmful.
	APIReader ctrl.Reader
	Options   Options
	Recorder  events.EventRecorder
	// Dialer opens connections to nodes; nil dials directly.
	Dialer DialFunc
	// secrets watches the TLS Secrets clusters reference, which the cache
	// does not hold; nil watches none.
	secrets *secretWatches
	// expected holds the nodes created and not yet in the cache.
	expected nodeExpectations
}

func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrlrt.Request) (ctrlrt.Result, error) {
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, req.NamespacedName, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			r.secrets.refer(req.NamespacedName, "")
		}
		return ctrlrt.Result{}, ctrl.IgnoreNotFound(err)
	}
	log := logf.FromContext(ctx).WithValues("cluster", vc.Name, "namespace", vc.Namespace)
	ctx = logf.IntoContext(ctx, log)

	if !vc.DeletionTimestamp.IsZero() {
		r.secrets.refer(req.NamespacedName, "")
		return r.finalize(ctx, &vc)
	}
	tlsSecret := ""
	if vc.Spec.TLS != nil {
		tlsSecret = vc.Spec.TLS.SecretRef
	}
	r.secrets.refer(req.NamespacedName, tlsSecret)
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
	settleGeneration(&vc, err == nil)
	recordClusterMetrics(&vc)
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
		// The rate limiter backs off per cluster (see errorBackoff).
		return ctrlrt.Result{}, err
	}
	return result, nil
}

func (r *ClusterReconciler) reconcile(ctx context.Context, vc *valkeyv1.ValkeyCluster) (ctrlrt.Result, error) {
	log := logFrom(ctx)
	if vc.Status.State == "" {
		vc.Status.State = valkeyv1.StateCreating
		vc.Status.TargetSpec = &valkeyv1.TargetTopology{Shards: vc.Spec.Shards, ReplicasPerShard: vc.Spec.ReplicasPerShard}
	}
	rc := render.Cluster{Cluster: vc, ClusterDomain: r.Options.ClusterDomain, DefaultZoneSpread: r.Options.DefaultZoneSpread,
		ExporterImage: r.Options.ExporterImage}

	// Cluster-level objects that do not depend on the TLS material are kept
	// current even while Invalid.
	if err := r.ensureService(ctx, rc); err != nil {
		return ctrlrt.Result{}, err
	}
	passwords, err := r.ensurePasswords(ctx, rc)
	if lost := (*errCredentialsLost)(nil); errors.As(err, &lost) {
		if c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondReady); c == nil || c.Reason != valkeyv1.ReasonCredentialsLost {
			r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonCredentialsLost, "EnsureCredentials", "%s", lost.message)
		}
		setCondition(vc, valkeyv1.CondReady, metav1.ConditionFalse, valkeyv1.ReasonCredentialsLost, lost.message)
		setCondition(vc, valkeyv1.CondDegraded, metav1.ConditionTrue, valkeyv1.ReasonCredentialsLost, lost.message)
	}
	if err != nil {
		return ctrlrt.Result{}, err
	}

	var tls tlsCheck
	var nodeCA []byte // the CA the nodes run with, while the user's Secret is invalid
	if vc.Spec.TLS != nil {
		// The user's Secret is not in the cache, which holds only the
		// operator's own Secrets.
		if tls, err = checkTLS(ctx, r.APIReader, vc, r.Options.ClusterDomain); err != nil {
			return ctrlrt.Result{}, err
		}
		if tls.Failure != nil {
			r.setInvalid(ctx, vc, tls.Failure.Reason, tls.Failure.Message)
			if nodeCA, err = r.mountedCA(ctx, rc); err != nil || nodeCA == nil || !formed(vc) {
				// Nothing runs yet that could need healing, or no copy of
				// the material the nodes run with to reach them.
				return ctrlrt.Result{RequeueAfter: r.Options.SteadyResync}, err
			}
		} else if vc.Status.State == valkeyv1.StateInvalid {
			// Back to where it was: bootstrap resumes, or a formed cluster
			// passes a no-op check on its way to Active.
			vc.Status.State = valkeyv1.StateCreating
			vc.Status.Message = ""
			r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonValid, "ValidateTLS", "TLS Secret %q is valid again", vc.Spec.TLS.SecretRef)
		}
		if tls.Failure == nil {
			r.applyTLSConditions(ctx, vc, tls)
			if err := r.ensureNodeTLSSecret(ctx, rc, tls.Secret); err != nil {
				return ctrlrt.Result{}, err
			}
		}
	}

	res, users, err := r.resolve(ctx, vc)
	if err != nil {
		var rerr *resolve.Error
		if errors.As(err, &rerr) {
			log.Info(rerr.Message)
			if !isConditionMessage(vc, valkeyv1.CondReferencesResolved, rerr.Message) {
				r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, rerr.Reason, "Resolve", "%s", rerr.Message)
			}
			setCondition(vc, valkeyv1.CondReferencesResolved, metav1.ConditionFalse, rerr.Reason, rerr.Message)
			return ctrlrt.Result{RequeueAfter: r.Options.SteadyResync}, nil
		}
		return ctrlrt.Result{}, err
	}
	setCondition(vc, valkeyv1.CondReferencesResolved, metav1.ConditionTrue, valkeyv1.ReasonResolved,
		fmt.Sprintf("config chain %v resolved to image %s", res.Chain, res.Image))
	r.applyDefaultUserCondition(vc, users)

	o, err := r.listMembers(ctx, vc)
	if err != nil {
		return ctrlrt.Result{}, err
	}
	// A view without the nodes the last wave created would plan them again.
	if missing := r.expected.unseen(ctrl.ObjectKeyFromObject(vc), o.has, time.Now()); len(missing) > 0 {
		log.V(1).Info("waiting for created nodes to reach the cache", "nodes", missing)
		return ctrlrt.Result{RequeueAfter: cacheRecheck}, nil
	}
	conn := &connector{cluster: vc, domain: r.Options.ClusterDomain, password: passwords.Operator, dialer: r.Dialer}
	if tls.Secret != nil || nodeCA != nil {
		conn.caPEM = nodeCA
		if tls.Secret != nil {
			conn.caPEM = tls.Secret.Data[tlssecret.KeyCA]
		}
		if conn.pins, err = r.verifiedLeaves(ctx, rc); err != nil {
			return ctrlrt.Result{}, err
		}
	}
	specs := map[int32]valkeyv1.ValkeyNodeSpec{}
	desired := func(shard int32) (valkeyv1.ValkeyNodeSpec, error) {
		if s, ok := specs[shard]; ok {
			return s, nil
		}
		s, err := rc.NodeSpec(res, shard)
		if err != nil {
			return s, fmt.Errorf("rendering node spec: %w", err)
		}
		specs[shard] = s
		return s, nil
	}
	if _, err := desired(0); err != nil {
		return ctrlrt.Result{}, err
	}
	if err := r.buildMembers(ctx, o, conn, desired); err != nil {
		return ctrlrt.Result{}, err
	}
	// The exporter's user outlives the setting until the last pod running
	// an exporter is replaced, so those keep authenticating meanwhile.
	exporter := res.Exporter || o.anyExporter()
	if err := r.ensureACLSecret(ctx, rc, users, passwords, o.minVersion(res.Version), exporter); err != nil {
		return ctrlrt.Result{}, err
	}
	rotating, err := r.rotateCredentials(ctx, vc, o, conn)
	if err != nil {
		return ctrlrt.Result{}, err
	}
	if err := r.ensurePDBs(ctx, rc, shardPods(vc, o)); err != nil {
		return ctrlrt.Result{}, err
	}
	if err := r.ensureNetworkPolicy(ctx, rc, exporter); err != nil {
		return ctrlrt.Result{}, err
	}
	if err := r.recordNodeStatus(ctx, o); err != nil {
		return ctrlrt.Result{}, err
	}
	if err := r.ensurePodAnnotations(ctx, vc, o); err != nil {
		return ctrlrt.Result{}, err
	}
	if err := r.ensurePodReadiness(ctx, o); err != nil {
		return ctrlrt.Result{}, err
	}

	shards, replicas := desiredShape(vc)
	creating := !formed(vc)
	in := topology.Input{
		Shards:           shards,
		ReplicasPerShard: replicas,
		Creating:         creating,
		AtomicMigration:  o.allAtLeast9(),
		BatchSize:        r.Options.SlotBatch,
		Members:          o.members,
		Now:              time.Now(),
	}
	wave := topology.Plan(in)
	if tls.Failure != nil {
		wave = healingOnly(wave)
	}
	failures := containerFailures(o)
	wave, held, err := r.backOffReplacements(ctx, vc, o, failures, wave)
	if err != nil {
		return ctrlrt.Result{}, err
	}
	r.reportContainerFailures(vc, failures, held)
	lead := wave.Lead()
	applySummary(vc, topology.Summarize(in), o.names())
	if p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); lead.Cause == topology.CauseScaleInNoHeadroom &&
		(p == nil || p.Reason != valkeyv1.ReasonInsufficientMemory) {
		// Once per hold: the figures in the message move with every write.
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonInsufficientMemory, "ScaleIn", "%s", describe(lead))
	}
	applyPlan(vc, lead, decideState(creating, lead, o))
	if tls.Failure != nil {
		// The plan's conditions say what heals; the state stays Invalid.
		r.setInvalid(ctx, vc, tls.Failure.Reason, tls.Failure.Message)
	}
	if r.applyPause(ctx, vc, wave) {
		return ctrlrt.Result{RequeueAfter: r.Options.SteadyResync}, nil
	}

	if !wave.Acts() {
		if creating && wave.Done() {
			log.Info(topology.ReasonFormed)
			r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonFormed, "Bootstrap", "%s", topology.ReasonFormed)
		}
		r.noteUnreachable(vc, o)
		if wave.Done() && !rotating {
			return ctrlrt.Result{RequeueAfter: r.Options.SteadyResync}, nil
		}
		if lead.Reason == topology.ReasonUnschedulable || lead.Reason == topology.ReasonWaitAutoFailover {
			log.Info(lead.Reason, "detail", lead.Detail)
		}
		return ctrlrt.Result{RequeueAfter: r.Options.PendingRequeue}, nil
	}

	log.V(1).Info("acting", "wave", wave.String())
	for _, a := range wave.Actions {
		if a.Reason == topology.ReasonRetryMigration {
			log.Info("slot migration failed, retrying", "detail", a.Detail)
		}
	}
	if err := r.actWave(ctx, &clusterScope{vc: vc, rc: rc, res: res, o: o, conn: conn}, wave); err != nil {
		return ctrlrt.Result{}, err
	}
	return afterWave(wave), nil
}
