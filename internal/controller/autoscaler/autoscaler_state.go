package autoscaler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/autoscale"
	"github.com/gomomento/valkey-operator/internal/controller/looks"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
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

func (r *autoscaler) interval() time.Duration {
	if r.Options.SampleInterval > 0 {
		return r.Options.SampleInterval
	}
	return options.DefaultOptions().SampleInterval
}
