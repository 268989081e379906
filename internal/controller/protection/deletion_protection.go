package protection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/finalizer"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// protection holds the deletion of a menu object (ValkeyImage,
// ValkeyConfig, ValkeyRole) while a config or cluster uses it: the object
// carries FinalizerInUse from the first reconcile, and a deleted one keeps
// it, with DeletionBlocked naming its users, until none is left. Who uses
// it is decided by resolve.MenuUse; this only reads and acts.
type protection struct {
	client.Client
	// APIReader lists the users around the cache: a cache that has not
	// yet seen a new config or cluster must not let its image go.
	APIReader client.Reader
	Options   options.Options
	Recorder  events.EventRecorder
}

// hold adds the finalizer to a live object, and on a deleted one removes
// it once users (given the live lists) finds none, or says who holds it.
func (p *protection) hold(ctx context.Context, obj client.Object, conds *[]metav1.Condition, kind string,
	users func(resolve.MenuUse, string) resolve.Dependents) error {
	if obj.GetDeletionTimestamp().IsZero() {
		if _, err := finalizer.Set(ctx, p.Client, obj, valkeyv1.FinalizerInUse, true); err != nil {
			return fmt.Errorf("adding the in-use finalizer to %s %s: %w", kind, obj.GetName(), err)
		}
		return nil
	}
	if !controllerutil.ContainsFinalizer(obj, valkeyv1.FinalizerInUse) {
		return nil
	}
	use, err := p.menuUse(ctx)
	if err != nil {
		return err
	}
	deps := users(use, obj.GetName())
	if deps.None() {
		if _, err := finalizer.Set(ctx, p.Client, obj, valkeyv1.FinalizerInUse, false); err != nil {
			return fmt.Errorf("releasing %s %s: %w", kind, obj.GetName(), err)
		}
		return nil
	}
	msg := deps.Message(kind, obj.GetName())
	if c := apimeta.FindStatusCondition(*conds, valkeyv1.CondDeletionBlocked); c != nil && c.Message == msg {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	apimeta.SetStatusCondition(conds, metav1.Condition{Type: valkeyv1.CondDeletionBlocked, Status: metav1.ConditionTrue,
		Reason: valkeyv1.ReasonInUse, Message: msg, ObservedGeneration: obj.GetGeneration()})
	if err := p.Status().Patch(ctx, obj, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing the status of %s %s: %w", kind, obj.GetName(), err)
	}
	p.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, valkeyv1.ReasonInUse, "Delete", "%s", msg)
	return nil
}

// menuUse lists every config, and every cluster the operator watches,
// from the API server itself.
func (p *protection) menuUse(ctx context.Context) (resolve.MenuUse, error) {
	var use resolve.MenuUse
	var configs valkeyv1.ValkeyConfigList
	if err := p.APIReader.List(ctx, &configs); err != nil {
		return use, fmt.Errorf("listing ValkeyConfigs: %w", err)
	}
	use.Configs = configs.Items
	namespaces := p.Options.WatchNamespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		var clusters valkeyv1.ValkeyClusterList
		if err := p.APIReader.List(ctx, &clusters, client.InNamespace(ns)); err != nil {
			return use, fmt.Errorf("listing ValkeyClusters: %w", err)
		}
		use.Clusters = append(use.Clusters, clusters.Items...)
	}
	return use, nil
}

type imageProtection struct{ *protection }

func (r imageProtection) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var img valkeyv1.ValkeyImage
	if err := r.Get(ctx, req.NamespacedName, &img); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, r.hold(ctx, &img, &img.Status.Conditions, "ValkeyImage", resolve.MenuUse.ImageUsers)
}

type configProtection struct{ *protection }

func (r configProtection) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cfg valkeyv1.ValkeyConfig
	if err := r.Get(ctx, req.NamespacedName, &cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, r.hold(ctx, &cfg, &cfg.Status.Conditions, "ValkeyConfig", resolve.MenuUse.ConfigUsers)
}

type roleProtection struct{ *protection }

func (r roleProtection) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var role valkeyv1.ValkeyRole
	if err := r.Get(ctx, req.NamespacedName, &role); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, r.hold(ctx, &role, &role.Status.Conditions, "ValkeyRole", resolve.MenuUse.RoleUsers)
}

// Setup registers one controller per menu kind. Each is
// woken by its own objects and, for the deleted ones, by any config or
// cluster change, since that may be the last use going.
func Setup(mgr ctrl.Manager, opts options.Options) error {
	p := &protection{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Options: opts, Recorder: mgr.GetEventRecorder("valkey-operator")}
	c := mgr.GetClient()
	deletedImages := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list valkeyv1.ValkeyImageList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			out = appendDeleted(out, &list.Items[i])
		}
		return out
	})
	deletedConfigs := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list valkeyv1.ValkeyConfigList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			out = appendDeleted(out, &list.Items[i])
		}
		return out
	})
	deletedRoles := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list valkeyv1.ValkeyRoleList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			out = appendDeleted(out, &list.Items[i])
		}
		return out
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("valkeyimage-protection").
		For(&valkeyv1.ValkeyImage{}).
		Watches(&valkeyv1.ValkeyConfig{}, deletedImages).
		Watches(&valkeyv1.ValkeyCluster{}, deletedImages).
		Complete(imageProtection{p}); err != nil {
		return fmt.Errorf("setting up ValkeyImage deletion protection: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("valkeyconfig-protection").
		For(&valkeyv1.ValkeyConfig{}).
		Watches(&valkeyv1.ValkeyConfig{}, deletedConfigs).
		Watches(&valkeyv1.ValkeyCluster{}, deletedConfigs).
		Complete(configProtection{p}); err != nil {
		return fmt.Errorf("setting up ValkeyConfig deletion protection: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("valkeyrole-protection").
		For(&valkeyv1.ValkeyRole{}).
		Watches(&valkeyv1.ValkeyConfig{}, deletedRoles).
		Watches(&valkeyv1.ValkeyCluster{}, deletedRoles).
		Complete(roleProtection{p}); err != nil {
		return fmt.Errorf("setting up ValkeyRole deletion protection: %w", err)
	}
	return nil
}

// appendDeleted adds obj's request when its deletion is held by the
// finalizer.
func appendDeleted(out []reconcile.Request, obj client.Object) []reconcile.Request {
	if obj.GetDeletionTimestamp().IsZero() || !controllerutil.ContainsFinalizer(obj, valkeyv1.FinalizerInUse) {
		return out
	}
	return append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: obj.GetName()}})
}
