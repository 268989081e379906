package autoscaler

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/autoscale"
	"github.com/gomomento/valkey-operator/internal/controller/looks"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// maxSamples is the API's bound on a node's sample history.
const maxSamples = 200

// defaultScaleInWindow is the history kept for a cluster without
// autoscaling: the documented default window, so turning autoscaling on
// does not start from nothing.
const defaultScaleInWindow = 300 * time.Second

// sampleTimeout bounds one node's INFO, so a silent node costs one
// sampling pass a few seconds, not the whole interval.
const sampleTimeout = 5 * time.Second

// autoscaler samples every node of every cluster on a fixed interval (INFO
// from the node itself, no metrics-server), publishes the samples in the
// ValkeyNode's status and as metrics, and for a cluster with
// spec.autoscaling decides status.autoscaling.desiredShards, which the
// cluster controller takes as its shard target.
type autoscaler struct {
	client.Client
	APIReader client.Reader
	Options   options.Options
	Recorder  events.EventRecorder
	Dialer    nodeconn.DialFunc
	// pool keeps the nodes' connections between samples; nil dials.
	pool *valkey.Pool
	// Looks holds the nodes' recent INFO answers; nil keeps none.
	Looks *looks.Store

	mu sync.Mutex
	// readings are each pod's last counters, by pod UID: a rate needs the
	// previous reading of the same process. Losing them (a restart) costs
	// one sample without CPU and bandwidth.
	readings map[types.UID]autoscale.Reading
	// sampled is when each cluster was last sampled, so events between
	// ticks re-evaluate without sampling again.
	sampled map[types.NamespacedName]time.Time
	// histories are each node's samples by cluster and ValkeyNode UID,
	// written to its status or not yet (see needsWrite). Losing them (a
	// restart) loses the samples not yet written.
	histories map[types.NamespacedName]map[types.UID][]autoscale.Sample
	// nodes are the node names each cluster has metric series for.
	nodes map[types.NamespacedName]map[string]bool
}

// Setup registers the sampling and autoscaling controller.
func Setup(mgr ctrl.Manager, opts options.Options, dialer nodeconn.DialFunc, pool *valkey.Pool, store *looks.Store) error {
	r := &autoscaler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Options:   opts,
		Recorder:  mgr.GetEventRecorder("valkey-operator"),
		Dialer:    dialer,
		pool:      pool,
		Looks:     store,
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("autoscaler").
		// Spec edits (autoscaling added, removed or changed) are acted on at
		// once; the rest waits for the tick.
		For(&valkeyv1.ValkeyCluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, watch.ClusterChangedFor(valkeyv1.CondProgressing, nil)))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r); err != nil {
		return fmt.Errorf("setting up autoscaler: %w", err)
	}
	return nil
}

func (r *autoscaler) interval() time.Duration {
	if r.Options.SampleInterval > 0 {
		return r.Options.SampleInterval
	}
	return options.DefaultOptions().SampleInterval
}

// due says whether the cluster's tick has come, and otherwise how long is
// left of it.
func (r *autoscaler) due(key types.NamespacedName, interval time.Duration) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sampled == nil {
		r.sampled = map[types.NamespacedName]time.Time{}
	}
	now := time.Now()
	// A tenth of the interval of slack keeps a requeue that fires a little
	// early from skipping a whole tick.
	if last, ok := r.sampled[key]; ok && now.Sub(last) < interval-interval/10 {
		return false, interval - now.Sub(last)
	}
	r.sampled[key] = now
	return true, 0
}

// unwritten says whether some node's kept samples are newer than its
// status holds.
func (r *autoscaler) unwritten(key types.NamespacedName, nodes []*valkeyv1.ValkeyNode) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range nodes {
		if h := r.histories[key][n.UID]; len(h) > 0 && h[len(h)-1].Time.After(newestWritten(n.Status.Utilisation)) {
			return true
		}
	}
	return false
}

func (r *autoscaler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.sampled, key)
	delete(r.histories, key)
	names := r.nodes[key]
	delete(r.nodes, key)
	r.mu.Unlock()
	for n := range names {
		forgetNodeMetrics(key.Namespace, key.Name, n)
	}
	forgetAutoscalingMetrics(key.Namespace, key.Name)
}

// IgnoreNewSamples passes every ValkeyNode change but a new sample, so
// sampling every node does not wake the cluster controller for each one;
// the cluster controller's wiring filters its node watch with it.
func IgnoreNewSamples() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyNode)
			n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyNode)
			if !ok1 || !ok2 {
				return true
			}
			o, n = o.DeepCopy(), n.DeepCopy()
			o.Status.Utilisation, n.Status.Utilisation = nil, nil
			o.ResourceVersion, n.ResourceVersion = "", ""
			o.ManagedFields, n.ManagedFields = nil, nil
			return !equality.Semantic.DeepEqual(o, n)
		},
	}
}
