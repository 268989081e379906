package controller

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/autoscaler"
	"github.com/gomomento/valkey-operator/internal/controller/backup"
	"github.com/gomomento/valkey-operator/internal/controller/cluster"
	"github.com/gomomento/valkey-operator/internal/controller/looks"
	"github.com/gomomento/valkey-operator/internal/controller/metering"
	"github.com/gomomento/valkey-operator/internal/controller/node"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/controller/protection"
	"github.com/gomomento/valkey-operator/internal/controller/reload"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// indexTLSSecret indexes clusters by the TLS Secret they reference, so a
// Secret change reaches exactly the clusters that use it.
const indexTLSSecret = "spec.tls.secretRef"

// Runtime adapts the operator to where pods run; the zero value is a real
// Kubernetes cluster.
type Runtime struct {
	// NodePath maps a path inside a pod to the path its node process sees;
	// nil is the identity, as in a real pod.
	NodePath reload.NodePathFunc
}

// A node's kept connections: up to nodePoolIdle per cluster, node and
// credentials (the controllers that visit it each pass rarely overlap),
// closed after nodePoolIdleFor unused (a node gone, a password rotated).
const (
	nodePoolIdle    = 2
	nodePoolIdleFor = 2 * time.Minute
)

// Setup registers every controller with the manager.
func Setup(mgr ctrl.Manager, opts options.Options) error {
	return SetupWithRuntime(mgr, opts, Runtime{})
}

// SetupWithRuntime is Setup for pods that do not run in a real pod sandbox,
// such as the local runtime.
func SetupWithRuntime(mgr ctrl.Manager, opts options.Options, rt Runtime) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &valkeyv1.ValkeyCluster{}, indexTLSSecret, func(o client.Object) []string {
		vc := o.(*valkeyv1.ValkeyCluster)
		if vc.Spec.TLS == nil {
			return nil
		}
		return []string{vc.Spec.TLS.SecretRef}
	}); err != nil {
		return fmt.Errorf("indexing clusters by TLS Secret: %w", err)
	}

	if err := watch.IndexInstances(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}

	// The visits every pass makes (the cluster controller's look, the
	// reloaders', the autoscaler's samples) keep their connections for the
	// next pass; backups and restores, which stream, dial their own.
	pool := valkey.NewPool(nodePoolIdle, nodePoolIdleFor)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		pool.Close()
		return nil
	})); err != nil {
		return fmt.Errorf("adding the node connection pool: %w", err)
	}
	// One look at each node per interval: the cluster controller's
	// observation keeps every node's INFO answer for the autoscaler, and
	// the autoscaler's samples wake a cluster whose nodes changed.
	wakes := newClusterWakes()
	if err := mgr.Add(wakes); err != nil {
		return fmt.Errorf("adding the sampled clusters' wakes: %w", err)
	}
	store := looks.New(wakes.Wake)
	if err := setupClusterController(mgr, opts, pool, store, wakes.events); err != nil {
		return err
	}

	nr := &node.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Options: opts, Recorder: mgr.GetEventRecorder("valkey-operator")}
	if err := nr.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up node controller: %w", err)
	}
	// Every runtime routes pod IPs, so the nodes are dialled directly (nil).
	if err := reload.SetupTLSReload(mgr, opts, nil, pool, rt.NodePath); err != nil {
		return err
	}
	if err := reload.SetupACLReload(mgr, opts, nil, pool); err != nil {
		return err
	}
	if err := autoscaler.Setup(mgr, opts, nil, pool, store); err != nil {
		return err
	}
	if err := backup.Setup(mgr, opts, nil); err != nil {
		return err
	}
	if err := backup.SetupRestore(mgr, opts, nil); err != nil {
		return err
	}
	if err := backup.SetupScheduled(mgr); err != nil {
		return err
	}
	if err := protection.Setup(mgr, opts); err != nil {
		return err
	}
	return metering.Setup(mgr, opts)
}

// setupClusterController registers the cluster controller with what wakes
// it: its cluster, its nodes, pods, claims and policies, the Secrets it
// reads, the menu objects every cluster resolves, and the autoscaler's
// samples (woken).
func setupClusterController(mgr ctrl.Manager, opts options.Options, pool *valkey.Pool, store *looks.Store, woken <-chan event.GenericEvent) error {
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("building a clientset: %w", err)
	}
	secrets := watch.NewSecretWatches(clientset)
	if err := mgr.Add(secrets); err != nil {
		return fmt.Errorf("adding the referenced Secrets' watches: %w", err)
	}
	cr := &cluster.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Options:   opts,
		Recorder:  mgr.GetEventRecorder("valkey-operator"),
		Secrets:   secrets,
		Pool:      pool,
		Looks:     store,
	}
	h := newClusterHandlers(mgr)
	if err := ctrl.NewControllerManagedBy(mgr).
		// Not on its own status writes: the controller writes the status
		// itself on every step of a bootstrap or a move, and each write
		// would start another reconcile ahead of the one the step asked
		// for. What other controllers write there for it to act on (the
		// autoscaler's shard target, a restore's progress) wakes it. The
		// reloaders' conditions are read at the next pass: nothing here
		// acts on them.
		For(&valkeyv1.ValkeyCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{},
			watch.HandedOver()))).
		Owns(&valkeyv1.ValkeyNode{}, builder.WithPredicates(autoscaler.IgnoreNewSamples())).
		// An edited or deleted policy is restored at once.
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&corev1.Pod{}, h.byInstanceLabel, builder.WithPredicates(watch.ManagedPods(), podChangesThatMatter())).
		// A claim's capacity growing moves the VolumeSize condition on.
		Watches(&corev1.PersistentVolumeClaim{}, h.byInstanceLabel).
		// A user's TLS Secret is not in the cache; its own watch reports it.
		WatchesRawSource(source.Channel(secrets.Events, h.byTLSSecret)).
		// A node whose role, replication link or replicas changed, or that
		// stopped answering, between the safety passes.
		WatchesRawSource(source.Channel(woken, &handler.EnqueueRequestForObject{})).
		Watches(&corev1.Secret{}, h.byOwnSecret).
		Watches(&valkeyv1.ValkeyConfig{}, h.allClusters).
		Watches(&valkeyv1.ValkeyImage{}, h.allClusters).
		Watches(&valkeyv1.ValkeyRole{}, h.allClusters).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.ClusterWorkers, RateLimiter: errorBackoff(opts)}).
		Named("valkeycluster").
		Complete(cr); err != nil {
		return fmt.Errorf("setting up cluster controller: %w", err)
	}
	return nil
}

// clusterHandlers map a watched object to the clusters it concerns.
type clusterHandlers struct {
	allClusters, byInstanceLabel, byTLSSecret, byOwnSecret handler.EventHandler
}

func newClusterHandlers(mgr ctrl.Manager) clusterHandlers {
	var h clusterHandlers
	h.allClusters = handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list valkeyv1.ValkeyClusterList
		if err := mgr.GetClient().List(ctx, &list); err != nil {
			return nil
		}
		return requestsFor(list.Items)
	})
	h.byInstanceLabel = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[valkeyv1.LabelInstance]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	// A user's TLS Secret reaches the clusters whose TLS it is.
	h.byTLSSecret = handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list valkeyv1.ValkeyClusterList
		if err := mgr.GetClient().List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexTLSSecret: o.GetName()}); err != nil {
			return nil
		}
		return requestsFor(list.Items)
	})
	// The operator's own Secrets (auth, ACL, TLS copy), which the cache
	// holds, reach the cluster that owns them: a deleted
	// {cluster}-operator-auth must be restored at once, not at the next
	// resync.
	h.byOwnSecret = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[valkeyv1.LabelInstance]
		if name == "" || o.GetLabels()[valkeyv1.LabelManagedBy] != valkeyv1.LabelManagedByValue {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	return h
}

// podChangesThatMatter passes a pod update only when it changes what the
// cluster controller decides from: the pod's state as the planner sees it
// (phase, address, deletion, why it cannot be scheduled), its containers'
// states, its labels. The annotations and the readiness gate the controller
// writes itself, and the Ready condition the kubelet derives from them,
// would otherwise start a reconcile per pod after every pass.
func podChangesThatMatter() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*corev1.Pod)
		cur, okNew := e.ObjectNew.(*corev1.Pod)
		if !okOld || !okNew {
			return true
		}
		return nodeconn.PodState(old) != nodeconn.PodState(cur) ||
			!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
			!maps.Equal(old.Labels, cur.Labels) ||
			!equality.Semantic.DeepEqual(old.Status.ContainerStatuses, cur.Status.ContainerStatuses) ||
			!equality.Semantic.DeepEqual(old.Status.InitContainerStatuses, cur.Status.InitContainerStatuses)
	}}
}

func requestsFor(items []valkeyv1.ValkeyCluster) []reconcile.Request {
	out := make([]reconcile.Request, len(items))
	for i := range items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: items[i].Namespace, Name: items[i].Name}}
	}
	return out
}
