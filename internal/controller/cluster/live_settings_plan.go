package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomomento/valkey-operator/internal/render"
)

// liveNode is what the live settings pass knows of one node.
type liveNode struct {
	name string
	// recorded are the settings on the node's spec, which its valkey.conf
	// is rendered from; desired are the ones the cluster asks for now.
	recorded, desired map[string]string
	// pending are the live settings recorded but not yet confirmed taken.
	pending []string
	// running is what CONFIG GET answered; nil when it was not read.
	running map[string]string
	// unread says a running node could not be asked.
	unread bool
}

// liveNodeStep is what to do to one node.
type liveNodeStep struct {
	name string
	// record: write desired into the node's spec (its valkey.conf follows)
	// with pending listed on it.
	record bool
	// target are the settings the node should run after this pass.
	target map[string]string
	// pending are the settings not confirmed taken once recorded.
	pending []string
	// set are the live settings to CONFIG SET, with target's values.
	set []string
	// drift are the live settings the node runs otherwise than target
	// without an edit pending on them: changed by hand.
	drift []string
	// confirmed: the node runs every pending setting; the pending list can
	// be cleared.
	confirmed bool
}

// livePlan is the pass over a cluster's nodes.
type livePlan struct {
	steps  []liveNodeStep
	unread []string
}

// planLiveSettings decides, per node, whether an edit of live settings is
// recorded (an edit touching any other setting is not: the node is
// outdated and rolled with its whole spec), which settings to set, and
// which drifted. revert says drift is set back, not only reported.
func planLiveSettings(nodes []liveNode, revert bool) livePlan {
	var p livePlan
	for _, n := range nodes {
		st := liveNodeStep{name: n.name, target: n.recorded, pending: slices.Clone(n.pending)}
		if live, restart := render.SettingsChange(n.recorded, n.desired); restart == "" && len(live) > 0 {
			st.record, st.target = true, n.desired
			st.pending = union(st.pending, live)
		}
		if n.unread {
			p.unread = append(p.unread, n.name)
		}
		if n.running != nil {
			for _, k := range render.LiveDrift(st.target, n.running) {
				if slices.Contains(st.pending, k) {
					st.set = append(st.set, k)
				} else {
					st.drift = append(st.drift, k)
				}
			}
			st.confirmed = len(st.pending) > 0 && len(st.set) == 0
			if revert {
				st.set = union(st.set, st.drift)
			}
		}
		p.steps = append(p.steps, st)
	}
	return p
}

// applying are the nodes with live settings not yet confirmed, each with
// them, for Progressing.
func (p livePlan) applying() []string {
	var out []string
	for _, st := range p.steps {
		if len(st.pending) > 0 && !st.confirmed {
			out = append(out, fmt.Sprintf("%s (%s)", st.name, strings.Join(st.pending, ", ")))
		}
	}
	return out
}

// drifted describes every drifted setting as node: key, for the condition.
func (p livePlan) drifted() []string {
	var out []string
	for _, st := range p.steps {
		if len(st.drift) > 0 {
			out = append(out, fmt.Sprintf("%s (%s)", st.name, strings.Join(st.drift, ", ")))
		}
	}
	return out
}

// driftCount is how many settings drifted, over all nodes, for the metric.
func (p livePlan) driftCount() int {
	n := 0
	for _, st := range p.steps {
		n += len(st.drift)
	}
	return n
}

// union is a and b without repeats, sorted.
func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
