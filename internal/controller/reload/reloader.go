package reload

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// reloader is what the TLS and ACL reloaders have in common. Each makes
// every running node of a cluster use what the cluster controller put in
// one Secret, without a restart, and reports how far it got in one
// condition. N is what visiting one node found; X is what the reloader
// remembers of a cluster besides what reloadMemory holds.
type reloader[N, X any] struct {
	client.Client
	// APIReader reads the cluster around the cache for status writes.
	APIReader client.Reader
	Options   options.Options
	Recorder  events.EventRecorder
	// Dialer opens connections to nodes; nil dials directly.
	Dialer nodeconn.DialFunc
	// pool keeps the nodes' connections between passes; nil dials.
	pool *valkey.Pool

	// condition is the one condition of the cluster the reloader owns.
	condition string
	// secret names, from the cluster's name, the Secret the nodes are
	// brought to.
	secret func(cluster string) string
	// metrics hold series per cluster, dropped with the cluster.
	metrics []*prometheus.MetricVec

	mu       sync.Mutex
	clusters map[types.NamespacedName]*reloadMemory[X]
}

// reloadMemory paces one cluster; losing it costs at most an extra reload
// per node.
type reloadMemory[X any] struct {
	// want is the hash of the Secret's content last seen; since is when the
	// nodes began not all using it.
	want  string
	since time.Time
	// nodes maps a pod to the hash of the content it is known to use.
	nodes map[types.UID]string
	// lastFull is when a pass last visited every node. settled says the
	// last pass ended with every node using want, and seen is the cluster
	// as that pass read it: together they let a look at an idle cluster
	// leave its nodes alone.
	lastFull time.Time
	settled  bool
	seen     clusterMark
	// own is what only this kind of reloader paces by.
	own X
}

// clusterMark is what of a cluster, changed, makes the next look a pass.
type clusterMark struct {
	generation int64
	state      valkeyv1.ClusterState
}

func markOf(vc *valkeyv1.ValkeyCluster) clusterMark {
	return clusterMark{generation: vc.Generation, state: vc.Status.State}
}

// reloadKind is what sets a reloader apart.
type reloadKind interface {
	// manages says whether the cluster has anything to reload.
	manages(vc *valkeyv1.ValkeyCluster) bool
	// tick is how soon a cluster is looked at again when nothing it
	// watches changes; a look at an idle cluster visits no node.
	tick() time.Duration
	// sync brings the cluster's nodes to the content of secret and reports
	// it.
	sync(ctx context.Context, vc *valkeyv1.ValkeyCluster, secret *corev1.Secret, tick time.Duration) (ctrl.Result, error)
}

// build wires the reloader to the manager and starts its controller: the
// clusters (updates filtered by watch.ClusterChangedFor with same) and the Secret
// of each.
func (r *reloader[N, X]) build(mgr ctrl.Manager, opts options.Options, dialer nodeconn.DialFunc, pool *valkey.Pool, name string,
	same func(o, n *valkeyv1.ValkeyCluster) bool) *builder.Builder {
	r.Client = mgr.GetClient()
	r.APIReader = mgr.GetAPIReader()
	r.Options = opts
	r.Recorder = mgr.GetEventRecorder("valkey-operator")
	r.Dialer = dialer
	r.pool = pool
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&valkeyv1.ValkeyCluster{}, builder.WithPredicates(watch.ClusterChangedFor(r.condition, same))).
		Watches(&corev1.Secret{}, watch.ToCluster(r.secret)).
		// A node that starts answering, or goes, is looked at at once: an
		// idle cluster is otherwise looked at again only when its safety
		// pass is due.
		Watches(&corev1.Pod{}, watch.ToCluster(watch.AnyName), builder.WithPredicates(watch.ManagedPods(), watch.PodAddressChanged())).
		// A node that does not answer holds up its own cluster's pass, not
		// every other cluster's.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4})
}

// reconcile reads the cluster and its Secret and has kind sync the nodes.
func (r *reloader[N, X]) reconcile(ctx context.Context, key types.NamespacedName, kind reloadKind) (ctrl.Result, error) {
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, key, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading cluster: %w", err)
	}
	if !kind.manages(&vc) || !vc.DeletionTimestamp.IsZero() {
		r.forget(key)
		return ctrl.Result{}, nil
	}
	tick := kind.tick()
	// An Invalid cluster is left alone (a TLS cluster's copy keeps the last
	// valid material, which the nodes already serve); the state change back
	// is watched.
	if vc.Status.State == valkeyv1.StateInvalid {
		return ctrl.Result{RequeueAfter: tick}, nil
	}
	log := logf.FromContext(ctx).WithValues("cluster", vc.Name, "namespace", vc.Namespace)
	ctx = logf.IntoContext(ctx, log)

	name := r.secret(vc.Name)
	var secret corev1.Secret
	switch err := r.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &secret); {
	case apierrors.IsNotFound(err):
		// Not written yet; its creation is watched.
		return ctrl.Result{RequeueAfter: tick}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	return kind.sync(ctx, &vc, &secret, tick)
}

// memory returns what is remembered of the cluster, the unsettled clock
// restarted when the Secret's content, hashed as want, changed; changed
// says it did.
func (r *reloader[N, X]) memory(key types.NamespacedName, want string) (m *reloadMemory[X], changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clusters == nil {
		r.clusters = map[types.NamespacedName]*reloadMemory[X]{}
	}
	m = r.clusters[key]
	if m == nil {
		m = &reloadMemory[X]{nodes: map[types.UID]string{}}
		r.clusters[key] = m
	}
	changed = m.want != want
	if changed {
		m.want, m.since = want, time.Now()
	}
	return m, changed
}

// unsettled is how long the cluster's nodes have not all used the content.
func (r *reloader[N, X]) unsettled(m *reloadMemory[X]) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Since(m.since)
}

// canIdle says this look at the cluster may leave every node alone (see
// idle), and how long until the safety pass is due; changed is memory's,
// and current says the cluster's status still shows what the last pass
// wrote besides the condition.
func (r *reloader[N, X]) canIdle(m *reloadMemory[X], vc *valkeyv1.ValkeyCluster, changed bool, pods []*corev1.Pod, current bool) (bool, time.Duration) {
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	cond := meta.FindStatusCondition(vc.Status.Conditions, r.condition)
	current = current && cond != nil && cond.Status == metav1.ConditionTrue
	safety := r.Options.SafetyFor(vc.UID)
	r.mu.Lock()
	defer r.mu.Unlock()
	in := idleInput{
		Changed:     changed,
		Settled:     m.settled,
		SameCluster: current && m.seen == markOf(vc),
		Want:        m.want,
		Known:       m.nodes,
		Pods:        uids,
		SinceFull:   time.Since(m.lastFull),
		Safety:      safety,
	}
	return idle(in), in.Safety - in.SinceFull
}

// fullDue says whether this pass visits every node: when the content
// changed or every has passed since the last that did (0: always). A full
// pass is taken as begun.
func (r *reloader[N, X]) fullDue(m *reloadMemory[X], changed bool, every time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	full := changed || now.Sub(m.lastFull) >= every
	if full {
		m.lastFull = now
	}
	return full
}

// passed records the end of a pass whose condition was written: settled
// says every node uses the content.
func (r *reloader[N, X]) passed(m *reloadMemory[X], vc *valkeyv1.ValkeyCluster, settled bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m.settled, m.seen = settled, markOf(vc)
}

func (r *reloader[N, X]) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.clusters, key)
	r.mu.Unlock()
	for _, m := range r.metrics {
		m.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "cluster": key.Name})
	}
}

// pass visits the pods concurrently, so one node that does not answer
// neither delays nor blocks the others. visit is given the hash the pod
// was remembered at and returns what it found and the hash to remember
// ("" for none). Only pods that still exist are remembered.
func (r *reloader[N, X]) pass(ctx context.Context, m *reloadMemory[X], pods []*corev1.Pod,
	visit func(ctx context.Context, pod *corev1.Pod, known string) (N, string)) []N {
	r.mu.Lock()
	known := make([]string, len(pods))
	for i, pod := range pods {
		known[i] = m.nodes[pod.UID]
	}
	r.mu.Unlock()

	out := make([]N, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], known[i] = visit(ctx, pod, known[i])
		}()
	}
	wg.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	m.nodes = map[types.UID]string{}
	for i, pod := range pods {
		if known[i] != "" {
			m.nodes[pod.UID] = known[i]
		}
	}
	return out
}

// writeStatus sets the reloader's condition and whatever also sets; also
// returning false leaves the cluster alone.
func (r *reloader[N, X]) writeStatus(ctx context.Context, key types.NamespacedName, status metav1.ConditionStatus, reason, message string,
	also func(vc *valkeyv1.ValkeyCluster) bool) error {
	err := clusterstatus.Update(ctx, r.Client, r.APIReader, key, func(vc *valkeyv1.ValkeyCluster) bool {
		if also != nil && !also(vc) {
			return false
		}
		clusterstatus.SetCondition(vc, r.condition, status, reason, message)
		return true
	})
	if err != nil {
		return fmt.Errorf("writing the %s condition: %w", r.condition, err)
	}
	return nil
}

// positiveOr is d, or fallback when d is not set.
func positiveOr(d, fallback time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return fallback
}
