package protection

import (
	"context"
	"fmt"
	"strings"

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

// kindProtection is the reconciler of one menu kind, T: it reads the
// object and holds or releases its deletion.
type kindProtection[T any, PT interface {
	*T
	client.Object
}] struct {
	*protection
	kind       string
	conditions func(PT) *[]metav1.Condition
	users      func(resolve.MenuUse, string) resolve.Dependents
}

func (r kindProtection[T, PT]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := PT(new(T))
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, r.hold(ctx, obj, r.conditions(obj), r.kind, r.users)
}

// Setup registers one controller per menu kind. Each is
// woken by its own objects and, for the deleted ones, by any config or
// cluster change, since that may be the last use going.
func Setup(mgr ctrl.Manager, opts options.Options) error {
	p := &protection{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Options: opts, Recorder: mgr.GetEventRecorder("valkey-operator")}
	for _, setup := range []func(ctrl.Manager, *protection) error{
		protect("ValkeyImage", resolve.MenuUse.ImageUsers,
			func(o *valkeyv1.ValkeyImage) *[]metav1.Condition { return &o.Status.Conditions },
			func(l *valkeyv1.ValkeyImageList) []valkeyv1.ValkeyImage { return l.Items }),
		protect("ValkeyConfig", resolve.MenuUse.ConfigUsers,
			func(o *valkeyv1.ValkeyConfig) *[]metav1.Condition { return &o.Status.Conditions },
			func(l *valkeyv1.ValkeyConfigList) []valkeyv1.ValkeyConfig { return l.Items }),
		protect("ValkeyRole", resolve.MenuUse.RoleUsers,
			func(o *valkeyv1.ValkeyRole) *[]metav1.Condition { return &o.Status.Conditions },
			func(l *valkeyv1.ValkeyRoleList) []valkeyv1.ValkeyRole { return l.Items }),
	} {
		if err := setup(mgr, p); err != nil {
			return err
		}
	}
	return nil
}

// protect is the setup of kind's controller: T is the kind's object, L its
// list; conditions and items reach into them, which the API types offer no
// common way to do.
func protect[T, L any, PT interface {
	*T
	client.Object
}, PL interface {
	*L
	client.ObjectList
}](kind string, users func(resolve.MenuUse, string) resolve.Dependents,
	conditions func(PT) *[]metav1.Condition, items func(PL) []T) func(ctrl.Manager, *protection) error {
	return func(mgr ctrl.Manager, p *protection) error {
		c := mgr.GetClient()
		deleted := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			list := PL(new(L))
			if err := c.List(ctx, list); err != nil {
				return nil
			}
			var out []reconcile.Request
			all := items(list)
			for i := range all {
				out = appendDeleted(out, PT(&all[i]))
			}
			return out
		})
		if err := ctrl.NewControllerManagedBy(mgr).Named(strings.ToLower(kind)+"-protection").
			For(PT(new(T))).
			Watches(&valkeyv1.ValkeyConfig{}, deleted).
			Watches(&valkeyv1.ValkeyCluster{}, deleted).
			Complete(kindProtection[T, PT]{protection: p, kind: kind, conditions: conditions, users: users}); err != nil {
			return fmt.Errorf("setting up %s deletion protection: %w", kind, err)
		}
		return nil
	}
}

// appendDeleted adds obj's request when its deletion is held by the
// finalizer.
func appendDeleted(out []reconcile.Request, obj client.Object) []reconcile.Request {
	if obj.GetDeletionTimestamp().IsZero() || !controllerutil.ContainsFinalizer(obj, valkeyv1.FinalizerInUse) {
		return out
	}
	return append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: obj.GetName()}})
}
