package node

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node valkeyv1.ValkeyNode
	if err := r.Get(ctx, req.NamespacedName, &node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := logf.FromContext(ctx).WithValues("cluster", node.Spec.ClusterName, "node", node.Name)
	ctx = logf.IntoContext(ctx, log)

	if !node.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &node)
	}
	if err := r.ExpandClaim(ctx, &node); err != nil {
		return ctrl.Result{}, err
	}
	podCreated := meta.IsStatusConditionTrue(node.Status.Conditions, valkeyv1.CondPodCreated)
	if podCreated {
		if err := r.refreshConfig(ctx, &node); err != nil {
			return ctrl.Result{}, err
		}
	}
	if podCreated && ComesBack(&node) {
		return ctrl.Result{}, r.bringBack(ctx, &node)
	}
	if node.Spec.Lifecycle != valkeyv1.LifecycleJoining || podCreated {
		return ctrl.Result{}, nil
	}
	pod, err := r.createObjects(ctx, &node, true)
	var refused *podRefusal
	if errors.As(err, &refused) {
		if err := r.recordRefusal(ctx, &node, refused); err != nil {
			return ctrl.Result{}, err
		}
		// Retried at a steady pace rather than the growing backoff of an
		// error: what heals it (a PriorityClass created, a quota raised)
		// happens outside anything this controller watches.
		log.Info("pod refused by the apiserver; retrying", "error", refused.err.Error())
		return ctrl.Result{RequeueAfter: refusedRetry}, nil
	}
	if err != nil || pod == nil {
		return ctrl.Result{}, err
	}
	// A patch, not an update: the cluster controller writes the node's
	// other status fields (its pod IP, role, slots) as the pod starts, and
	// an update from this pass's copy would fail on every such write and
	// redo the pass. Only this controller writes the conditions.
	before := node.DeepCopy()
	meta.SetStatusCondition(&node.Status.Conditions, metav1.Condition{
		Type: valkeyv1.CondPodCreated, Status: metav1.ConditionTrue, Reason: valkeyv1.ReasonPodCreated,
		Message: "pod " + pod.Name + " created", ObservedGeneration: node.Generation,
	})
	if err := r.Status().Patch(ctx, &node, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, fmt.Errorf("recording pod creation on node %s: %w", node.Name, err)
	}
	return ctrl.Result{}, nil
}

// ComesBack: a persistent node that is not being retired gets its pod back
// whenever it is gone. The cluster controller reads the same rule, so it
// sees such a node's missing pod as pending, never as a lost node.
func ComesBack(node *valkeyv1.ValkeyNode) bool {
	return node.Spec.Persistence != nil && node.Spec.Lifecycle != valkeyv1.LifecycleLeaving
}

// createObjects creates the node's ConfigMap, its claim when withClaim,
// and its pod, each unless it exists; it returns the pod, nil when the
// cluster is gone.
func (r *Reconciler) createObjects(ctx context.Context, node *valkeyv1.ValkeyNode, withClaim bool) (*corev1.Pod, error) {
	log := logf.FromContext(ctx)
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: node.Spec.ClusterName}, &vc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	rc := render.Cluster{Cluster: &vc, ClusterDomain: r.Options.ClusterDomain, DefaultZoneSpread: r.Options.DefaultZoneSpread}

	cm, err := rc.NodeConfigMap(node)
	if err != nil {
		return nil, fmt.Errorf("rendering ConfigMap of node %s: %w", node.Name, err)
	}
	if err := r.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
	}
	pvc, err := rc.NodeClaim(node)
	if err != nil {
		return nil, fmt.Errorf("rendering claim of node %s: %w", node.Name, err)
	}
	if pvc != nil && withClaim {
		if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating PersistentVolumeClaim %s: %w", pvc.Name, err)
		}
	}
	pod, err := rc.Pod(node)
	if err != nil {
		return nil, fmt.Errorf("rendering pod of node %s: %w", node.Name, err)
	}
	switch err := r.Create(ctx, pod); {
	case err == nil:
		log.Info("creating Pod for node")
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.ReasonPodCreatedEvent, "CreatePod", "created pod %s", pod.Name)
	case apierrors.IsAlreadyExists(err):
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		return nil, &podRefusal{pod: pod.Name, err: err}
	default:
		return nil, fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	return pod, nil
}

// bringBack gives a persistent node its pod again: a pod that ended (an
// eviction; a crash restarts in place) is deleted, a deleted one created
// anew on the same claim. A pod still stopping is waited for: its delete
// event brings the node back here. The claim is never created again: one
// gone since the first pod took the node's data with it, and a new, empty
// one would bring the node back without its keys or identity, a loss
// nobody is told of. Without a usable claim the node gets no pod; it
// stays pending until the cluster controller, on proof, gives it up
// (topology.VolumeLost).
func (r *Reconciler) bringBack(ctx context.Context, node *valkeyv1.ValkeyNode) error {
	var pod corev1.Pod
	err := r.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: node.Name}, &pod)
	switch {
	case apierrors.IsNotFound(err):
		usable, err := r.claimUsable(ctx, node)
		if err != nil || !usable {
			return err
		}
		_, err = r.createObjects(ctx, node, false)
		return err
	case err != nil:
		return fmt.Errorf("reading pod of node %s: %w", node.Name, err)
	case pod.DeletionTimestamp.IsZero() && (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded):
		if err := r.Delete(ctx, &pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ended pod of node %s: %w", node.Name, err)
		}
	}
	return nil
}

// claimUsable: the persistent node's claim exists and is not being
// deleted. A pod is never created on a claim being deleted: a kubelet
// refuses to start it, and while a scheduled pod names the claim, the
// claim's protection keeps it from going, so neither would ever end.
func (r *Reconciler) claimUsable(ctx context.Context, node *valkeyv1.ValkeyNode) (bool, error) {
	var claim corev1.PersistentVolumeClaim
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: render.NodeClaimName(node.Name)}, &claim)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the claim of node %s: %w", node.Name, err)
	}
	return claim.DeletionTimestamp.IsZero(), nil
}

// finalize deletes the node's pod and ConfigMap. Owner references would let
// the garbage collector do it too, but the pod should stop with its node
// even where no collector runs.
func (r *Reconciler) finalize(ctx context.Context, node *valkeyv1.ValkeyNode) error {
	if !controllerutil.ContainsFinalizer(node, valkeyv1.FinalizerNode) {
		return nil
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: node.Namespace, Name: node.Name}}
	if err := r.Delete(ctx, pod, podDeleteOptions(node)...); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: node.Namespace, Name: render.NodeConfigMapName(node.Name)}}
	if err := r.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ConfigMap %s: %w", cm.Name, err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	controllerutil.RemoveFinalizer(node, valkeyv1.FinalizerNode)
	if err := r.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("removing finalizer of node %s: %w", node.Name, err)
	}
	return nil
}

// SetupWithManager watches ValkeyNodes and the pods and claims they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&valkeyv1.ValkeyNode{}).
		Owns(&corev1.Pod{}).
		// A claim bound after its node's size was raised is expanded then.
		Owns(&corev1.PersistentVolumeClaim{}).
		Named("valkeynode").
		// Each node's reconcile touches only its own pod and ConfigMap; a
		// wave that creates many nodes should get their pods in parallel,
		// not one API round trip after another.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.WaveConcurrency}).
		Complete(r)
}
