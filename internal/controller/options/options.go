package options

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// Options are the operator's process-wide settings.
type Options struct {
	// ClusterDomain is the DNS suffix of per-pod names (default cluster.local).
	ClusterDomain string
	// DefaultZoneSpread applies to clusters that do not set placement.zoneSpread.
	DefaultZoneSpread valkeyv1.ZoneSpread
	// TLSReloadInterval is how often the TLS reload controller looks at a
	// cluster again when nothing it watches changes.
	TLSReloadInterval time.Duration
	// ACLReloadInterval is the same for the ACL reload controller.
	ACLReloadInterval time.Duration
	// SafetyInterval is how often, give or take a fifth per cluster
	// (SafetyFor), a converged cluster nothing woke is looked at again in
	// full: the cluster controller asks every node and re-checks every
	// derived object, and the reload controllers visit every node. Between
	// these passes the cluster is woken by its watched objects and by the
	// autoscaler's samples of its nodes (a changed role, replication link
	// or replica count, a node that stops answering); this pass catches
	// what neither reports (a setting or a node's rules edited by hand).
	SafetyInterval time.Duration
	// SteadyResync is how soon a cluster that waits on something only a
	// person changes (the paused annotation, a reference to fix, a TLS
	// Secret that does not load) is looked at again.
	SteadyResync time.Duration
	// CredentialsSettle is how long a rotation keeps accepting the previous
	// passwords after the switch: a container restarting meanwhile may
	// still read the previous replication password from its mounted Secret,
	// which the kubelet refreshes only after a delay.
	CredentialsSettle time.Duration
	// PendingRequeue is how soon a cluster waiting on something external is re-checked.
	PendingRequeue time.Duration
	// ErrorBackoffBase and ErrorBackoffMax bound the per-cluster
	// exponential backoff after a failed reconcile.
	ErrorBackoffBase time.Duration
	ErrorBackoffMax  time.Duration
	// SlotBatch is how many slots one resharding step moves.
	SlotBatch int
	// ClusterWorkers is how many clusters are reconciled at once. One
	// cluster is never reconciled twice at once; several workers keep a
	// cluster whose step is slow (a batch of keys moving, a node timing
	// out) from holding up the failover handling of every other one. A
	// pass mostly waits on the API and the nodes, so a fleet created at
	// once converges faster with many (the fleet benchmark, 400 one-node
	// clusters on two cores: 4m12s with 4 workers, 2m49s with 16, 2m21s
	// with 32, no faster with 64).
	ClusterWorkers int
	// WaveConcurrency is how many actions of one cluster's wave run at
	// once. With ClusterWorkers it bounds the operator's total: at most
	// ClusterWorkers x WaveConcurrency calls to Valkey or the API at a time.
	WaveConcurrency int
	// SampleInterval is how often every node's utilisation is sampled and
	// autoscaling decided.
	SampleInterval time.Duration
	// Namespace is the operator's own namespace: the metering records live
	// there, and each cluster's NetworkPolicy admits it to the client port.
	Namespace string
	// MeteringInterval is how often every cluster's metering record is
	// advanced when its billed figure stays the same; a change of the
	// figure is sampled when a node's change shows it. Each sample is one
	// write per cluster, most of what an idle fleet costs the API.
	MeteringInterval time.Duration
	// ExporterImage runs the metrics exporter of clusters whose config
	// enables it; pods created afterwards get a changed one.
	ExporterImage string
	// FilterCache caches only the Secrets and Pods the operator labeled
	// (CacheOptions); false caches every one in the Kubernetes cluster, as
	// a comparison for what the filter saves.
	FilterCache bool
	// WatchNamespaces, when set, confines the operator to these namespaces:
	// it sees and acts on ValkeyClusters and their objects there only, and
	// needs namespaced permissions there only. Empty watches every namespace.
	WatchNamespaces []string
	// RestoreFeedAddress is where the operator listens, once a restore
	// needs it, for the scratch servers (loaders) that replicate a
	// backup's files from it.
	RestoreFeedAddress string
	// RestoreFeedHost is the address loaders dial to reach that listener:
	// the operator pod's IP. Empty, restores wait with a message saying so.
	RestoreFeedHost string
}

// SplitNamespaces parses a comma-separated namespace list as given on the
// command line; the empty string is the empty list (every namespace).
// Names are kept as given, empty ones included, for Validate to refuse.
func SplitNamespaces(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// Watches says whether the operator acts in namespace ns.
func (o Options) Watches(ns string) bool {
	return len(o.WatchNamespaces) == 0 || slices.Contains(o.WatchNamespaces, ns)
}

// DefaultRestoreFeedPort is the port restore loaders replicate from.
const DefaultRestoreFeedPort = 7380

// DefaultNamespace is where the install puts the operator.
const DefaultNamespace = "valkey-operator"

// DefaultOptions are the shipped defaults.
func DefaultOptions() Options {
	return Options{
		ClusterDomain:     "cluster.local",
		DefaultZoneSpread: valkeyv1.ZoneSpreadBestEffort,
		TLSReloadInterval: 30 * time.Second,
		ACLReloadInterval: 30 * time.Second,
		// Long next to the sample interval: a pass over an idle cluster
		// asks every node several questions and opens a TLS connection to
		// each, which the samples that wake a cluster make rarely needed.
		SafetyInterval:    5 * time.Minute,
		SteadyResync:      30 * time.Second,
		PendingRequeue:    2 * time.Second,
		CredentialsSettle: 2 * time.Minute,
		ErrorBackoffBase:  500 * time.Millisecond,
		ErrorBackoffMax:   time.Minute,
		SlotBatch:         64,
		ClusterWorkers:    32,
		WaveConcurrency:   16,
		SampleInterval:    30 * time.Second,
		Namespace:         DefaultNamespace,
		MeteringInterval:  5 * time.Minute,
		ExporterImage:     render.DefaultExporterImage,
		FilterCache:       true,
		// RestoreFeedHost comes from the environment (operatorcmd).
		RestoreFeedAddress: ":" + strconv.Itoa(DefaultRestoreFeedPort),
	}
}

// Validate refuses settings the operator cannot run with.
func (o Options) Validate() error {
	switch o.DefaultZoneSpread {
	case valkeyv1.ZoneSpreadBestEffort, valkeyv1.ZoneSpreadRequired:
	default:
		return fmt.Errorf("default zone spread %q: must be %q or %q", o.DefaultZoneSpread, valkeyv1.ZoneSpreadBestEffort, valkeyv1.ZoneSpreadRequired)
	}
	if o.ClusterDomain == "" {
		return fmt.Errorf("cluster domain must not be empty")
	}
	if o.ClusterWorkers < 1 {
		return fmt.Errorf("cluster workers %d: must be at least 1", o.ClusterWorkers)
	}
	if o.WaveConcurrency < 1 {
		return fmt.Errorf("wave concurrency %d: must be at least 1", o.WaveConcurrency)
	}
	if o.ErrorBackoffBase <= 0 || o.ErrorBackoffMax < o.ErrorBackoffBase {
		return fmt.Errorf("error backoff %v to %v: the base must be positive and at most the maximum", o.ErrorBackoffBase, o.ErrorBackoffMax)
	}
	if o.SampleInterval < time.Second {
		return fmt.Errorf("sample interval %s: must be at least 1s", o.SampleInterval)
	}
	if o.Namespace == "" {
		return fmt.Errorf("operator namespace must not be empty")
	}
	if o.MeteringInterval < time.Second {
		return fmt.Errorf("metering interval %s: must be at least 1s", o.MeteringInterval)
	}
	if o.CredentialsSettle < 0 {
		return fmt.Errorf("credentials settle %s: must not be negative", o.CredentialsSettle)
	}
	if o.ExporterImage == "" {
		return fmt.Errorf("exporter image must not be empty")
	}
	seen := map[string]bool{}
	for _, ns := range o.WatchNamespaces {
		if ns == "" {
			return fmt.Errorf("watch namespaces %q: a namespace name is empty", strings.Join(o.WatchNamespaces, ","))
		}
		if seen[ns] {
			return fmt.Errorf("watch namespaces %q: %s is listed twice", strings.Join(o.WatchNamespaces, ","), ns)
		}
		seen[ns] = true
	}
	if o.SlotBatch < 1 {
		return fmt.Errorf("slot batch %d: must be at least 1", o.SlotBatch)
	}
	return nil
}
