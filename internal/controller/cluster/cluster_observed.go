package cluster

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// observed is one tick's picture of a cluster: its ValkeyNodes, their pods
// and, for every running pod, what Valkey itself reports.
type observed struct {
	nodes   map[string]*valkeyv1.ValkeyNode
	pods    map[string]*corev1.Pod
	members []topology.Member
	// versions holds the Valkey version each reachable node reports.
	versions map[string]valkey.Version
	// unreachable maps a running node to why it could not be asked.
	unreachable map[string]error
	// relabelled are the nodes whose pod exists but had lost the labels
	// the operator's cache selects on (see readMissingPods).
	relabelled []string
	// settings holds, per reachable node, the live settings it runs
	// (CONFIG GET); settingsUnread, why a running node's could not be read.
	settings       map[string]map[string]string
	settingsUnread map[string]error
	// liveUnsettled are the staying nodes that do not yet record the live
	// settings their shard asks for, or have not confirmed taking them.
	liveUnsettled []string
}

// names are the view's nodes, sorted.
func (o *observed) names() []string { return slices.Sorted(maps.Keys(o.nodes)) }

// has reports whether the view holds node.
func (o *observed) has(node string) bool {
	_, ok := o.nodes[node]
	return ok
}

// minVersion is the lowest version any reachable node runs, or fallback
// when none answered.
func (o *observed) minVersion(fallback string) string {
	lowest := ""
	var low valkey.Version
	for _, v := range o.versions {
		if lowest == "" || v.Compare(low) < 0 {
			low, lowest = v, v.String()
		}
	}
	if lowest == "" {
		return fallback
	}
	if fb, err := valkey.ParseVersion(fallback); err == nil && fb.Compare(low) < 0 {
		return fallback
	}
	return lowest
}

// anyOutdated says whether some member's spec differs from the one the
// cluster asks for now: a roll is owed.
func (o *observed) anyOutdated() bool {
	for _, m := range o.members {
		if m.Outdated {
			return true
		}
	}
	return false
}

// settled says every member runs the spec the cluster asks for now, live
// settings included: only then has it rolled out the generations of the
// image and configs it uses.
func (o *observed) settled() bool { return !o.anyOutdated() && len(o.liveUnsettled) == 0 }

// anyExporter says whether some node's pod runs the metrics exporter.
func (o *observed) anyExporter() bool {
	for _, n := range o.nodes {
		if n.Spec.ExporterImage != "" {
			return true
		}
	}
	return false
}

// allAtLeast9 says whether every member runs Valkey 9 or later, which slot
// moves through CLUSTER MIGRATESLOTS need.
func (o *observed) allAtLeast9() bool {
	if len(o.versions) == 0 || len(o.versions) < len(o.members) {
		return false
	}
	for _, v := range o.versions {
		if v.Major < 9 {
			return false
		}
	}
	return true
}
