package metering

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrlrt "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/finalizer"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/metering"
	"github.com/gomomento/valkey-operator/internal/render"
)

// meteringReconciler keeps one ValkeyMeteringRecord per ValkeyCluster in
// the operator's namespace: created with the cluster, advanced every
// Options.MeteringInterval, kept after the cluster is deleted, and removed
// only once released (the release annotation) and deleted.
type meteringReconciler struct {
	client.Client
	Options  options.Options
	Recorder events.EventRecorder
}

// RecordName is the record of a cluster: its namespace, name and
// the start of its UID, so a later cluster of the same name gets its own.
func RecordName(vc *valkeyv1.ValkeyCluster) string {
	uid := string(vc.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return vc.Namespace + "." + vc.Name + "." + uid
}

// recordRequest is the record key of a cluster.
func (r *meteringReconciler) recordRequest(vc *valkeyv1.ValkeyCluster) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Options.Namespace, Name: RecordName(vc)}}
}

func (r *meteringReconciler) Reconcile(ctx context.Context, req ctrlrt.Request) (ctrlrt.Result, error) {
	var rec valkeyv1.ValkeyMeteringRecord
	switch err := r.Get(ctx, req.NamespacedName, &rec); {
	case apierrors.IsNotFound(err):
		return r.create(ctx, req)
	case err != nil:
		return ctrlrt.Result{}, fmt.Errorf("reading metering record %s: %w", req.Name, err)
	}
	if !rec.DeletionTimestamp.IsZero() {
		return ctrlrt.Result{}, r.release(ctx, &rec)
	}
	if _, err := finalizer.Set(ctx, r.Client, &rec, valkeyv1.FinalizerMetering, true); err != nil {
		return ctrlrt.Result{}, fmt.Errorf("adding the finalizer to metering record %s: %w", rec.Name, err)
	}
	if rec.Status.ClusterDeleted != nil {
		return ctrlrt.Result{}, nil // final: kept until released
	}
	if !r.Options.Watches(rec.Spec.ClusterNamespace) {
		// A record left from a wider install: its cluster cannot be seen
		// from here, which is not the same as gone, so it is left as it is
		// rather than closed.
		return ctrlrt.Result{}, nil
	}
	vc, err := r.meteredCluster(ctx, &rec)
	if err != nil {
		return ctrlrt.Result{}, err
	}
	// Whole seconds: the API keeps times to the second, and a sample time
	// that lost its fraction on the way would bill that fraction twice.
	now := time.Now().Truncate(time.Second)
	before := rec.DeepCopy()
	meter := meterOf(&rec.Status)
	if vc == nil {
		// Billed up to the moment the deletion was seen, at the last figure.
		meter = meter.Advance(now, 0)
		setMeter(&rec.Status, meter)
		rec.Status.ClusterDeleted = &metav1.Time{Time: now}
	} else {
		provisioned, nodes, sources, err := r.provisioned(ctx, vc)
		if err != nil {
			return ctrlrt.Result{}, err
		}
		if rec.Status.LastSample != nil {
			sample, wait := metering.SampleNow(rec.Status.LastSample.Time, now, r.Options.MeteringInterval, rec.Status.ProvisionedBytes, provisioned)
			if !sample {
				return ctrlrt.Result{RequeueAfter: wait}, nil
			}
		}
		meter = meter.Advance(now, provisioned)
		setMeter(&rec.Status, meter)
		rec.Status.Nodes, rec.Status.Sources = nodes, sources
	}
	// Optimistically locked: a sample computed from a record the cache
	// shows from before the last write would bill that write's span again.
	if err := r.Status().Patch(ctx, &rec, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrlrt.Result{}, fmt.Errorf("writing metering record %s: %w", rec.Name, err)
	}
	if vc == nil {
		return ctrlrt.Result{}, nil
	}
	return ctrlrt.Result{RequeueAfter: r.Options.MeteringInterval}, nil
}

// create makes the record of a running cluster. The request names the
// record, so the cluster is found from the name's parts.
func (r *meteringReconciler) create(ctx context.Context, req ctrlrt.Request) (ctrlrt.Result, error) {
	ns, rest, ok := strings.Cut(req.Name, ".")
	i := strings.LastIndex(rest, ".")
	if !ok || i < 0 || !r.Options.Watches(ns) {
		return ctrlrt.Result{}, nil // not a record name of ours, or not a cluster of ours
	}
	var vc valkeyv1.ValkeyCluster
	switch err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: rest[:i]}, &vc); {
	case apierrors.IsNotFound(err):
		return ctrlrt.Result{}, nil
	case err != nil:
		return ctrlrt.Result{}, fmt.Errorf("reading cluster %s/%s: %w", ns, rest[:i], err)
	}
	if RecordName(&vc) != req.Name || !vc.DeletionTimestamp.IsZero() {
		return ctrlrt.Result{}, nil
	}
	rec := &valkeyv1.ValkeyMeteringRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, Finalizers: []string{valkeyv1.FinalizerMetering},
			Labels: map[string]string{valkeyv1.LabelManagedBy: valkeyv1.LabelManagedByValue}},
		Spec: valkeyv1.ValkeyMeteringRecordSpec{ClusterNamespace: vc.Namespace, ClusterName: vc.Name, ClusterUID: string(vc.UID)},
	}
	if err := r.Create(ctx, rec); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrlrt.Result{}, fmt.Errorf("creating metering record %s: %w", req.Name, err)
	}
	// The first sample starts the clock; the next advances it.
	return ctrlrt.Result{Requeue: true}, nil
}

// release lets a deleted record go once it carries the release annotation.
func (r *meteringReconciler) release(ctx context.Context, rec *valkeyv1.ValkeyMeteringRecord) error {
	if !controllerutil.ContainsFinalizer(rec, valkeyv1.FinalizerMetering) {
		return nil
	}
	if rec.Annotations[valkeyv1.AnnotationRelease] != "true" {
		// Said once per deletion: the record is not updated while it waits.
		r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, valkeyv1.ReasonReleaseRequired, "Release",
			"deletion held: a metering record cannot be rebuilt once gone; export it, then annotate it %s=true", valkeyv1.AnnotationRelease)
		return nil
	}
	if _, err := finalizer.Set(ctx, r.Client, rec, valkeyv1.FinalizerMetering, false); err != nil {
		return fmt.Errorf("releasing metering record %s: %w", rec.Name, err)
	}
	r.Recorder.Eventf(rec, nil, corev1.EventTypeNormal, valkeyv1.ReasonMeteringReleased, "Release",
		"record of cluster %s/%s released at %s GB-hours", rec.Spec.ClusterNamespace, rec.Spec.ClusterName, rec.Status.GBHours)
	return nil
}

// meteredCluster is the record's cluster, or nil once it is gone (or
// replaced by a later cluster of the same name).
func (r *meteringReconciler) meteredCluster(ctx context.Context, rec *valkeyv1.ValkeyMeteringRecord) (*valkeyv1.ValkeyCluster, error) {
	var vc valkeyv1.ValkeyCluster
	switch err := r.Get(ctx, types.NamespacedName{Namespace: rec.Spec.ClusterNamespace, Name: rec.Spec.ClusterName}, &vc); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading cluster %s/%s: %w", rec.Spec.ClusterNamespace, rec.Spec.ClusterName, err)
	}
	if string(vc.UID) != rec.Spec.ClusterUID {
		return nil, nil
	}
	return &vc, nil
}

// provisioned sums the figure of every node of the cluster.
func (r *meteringReconciler) provisioned(ctx context.Context, vc *valkeyv1.ValkeyCluster) (int64, int32, map[valkeyv1.MeteringSource]int32, error) {
	var nodes valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &nodes, watch.OfCluster(vc.Namespace, vc.Name)...); err != nil {
		return 0, 0, nil, fmt.Errorf("listing nodes of %s/%s: %w", vc.Namespace, vc.Name, err)
	}
	var total int64
	sources := map[valkeyv1.MeteringSource]int32{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.ClusterName != vc.Name {
			continue
		}
		bytes, source := metering.Figure(metering.NodeFromSpec(n))
		total += bytes
		sources[source]++
	}
	return total, int32(len(nodes.Items)), sources, nil
}

func meterOf(s *valkeyv1.ValkeyMeteringRecordStatus) metering.Meter {
	m := metering.Meter{MegabyteSeconds: s.MegabyteSeconds, RemainderByteMillis: s.RemainderByteMillis, ProvisionedBytes: s.ProvisionedBytes}
	if s.LastSample != nil {
		m.Last = s.LastSample.Time
	}
	return m
}

func setMeter(s *valkeyv1.ValkeyMeteringRecordStatus, m metering.Meter) {
	s.MegabyteSeconds, s.RemainderByteMillis, s.ProvisionedBytes = m.MegabyteSeconds, m.RemainderByteMillis, m.ProvisionedBytes
	s.GBHours = metering.GBHours(m.MegabyteSeconds)
	s.LastSample = &metav1.Time{Time: m.Last}
	if s.Since == nil {
		s.Since = &metav1.Time{Time: m.Last}
	}
}

// Setup registers the metering controller: records are reconciled on
// their own changes, on their cluster's creation and deletion, and on a
// change of a node's billed figure (a node added, removed or resized, a
// higher peak observed), which is sampled at once.
func Setup(mgr ctrlrt.Manager, opts options.Options) error {
	r := &meteringReconciler{Client: mgr.GetClient(), Options: opts, Recorder: mgr.GetEventRecorder("valkey-operator")}
	byCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		vc, ok := o.(*valkeyv1.ValkeyCluster)
		if !ok {
			return nil
		}
		return []reconcile.Request{r.recordRequest(vc)}
	})
	if err := ctrlrt.NewControllerManagedBy(mgr).
		// A record's own status write would wake it once more per sample
		// for nothing: it comes back when its requeue says, or when its
		// spec, annotations (the release), finalizers or deletion change.
		For(&valkeyv1.ValkeyMeteringRecord{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool {
					return !e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp()) ||
						!slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
				},
			}))).
		Watches(&valkeyv1.ValkeyCluster{}, byCluster, builder.WithPredicates(predicate.Funcs{
			// Spec and status edits change nothing the meter reads between
			// samples; creation and deletion start and stop it.
			UpdateFunc: func(e event.UpdateEvent) bool {
				return e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil
			},
		})).
		Watches(&valkeyv1.ValkeyNode{}, handler.EnqueueRequestsFromMapFunc(r.nodeRecord), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return figureChanged(e.ObjectOld, e.ObjectNew) },
		})).
		Named("valkeymeteringrecord").
		Complete(r); err != nil {
		return fmt.Errorf("setting up metering controller: %w", err)
	}
	return nil
}

// nodeRecord is the record of the cluster that controls the node.
func (r *meteringReconciler) nodeRecord(_ context.Context, o client.Object) []reconcile.Request {
	vc := render.ControllingCluster(o)
	if vc == nil {
		return nil
	}
	return []reconcile.Request{r.recordRequest(vc)}
}

// figureChanged says whether a node's update changes what it is billed at.
func figureChanged(old, cur client.Object) bool {
	o, ok1 := old.(*valkeyv1.ValkeyNode)
	n, ok2 := cur.(*valkeyv1.ValkeyNode)
	if !ok1 || !ok2 {
		return false
	}
	before, _ := metering.Figure(metering.NodeFromSpec(o))
	after, _ := metering.Figure(metering.NodeFromSpec(n))
	return before != after
}
