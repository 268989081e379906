package topology

import (
	"fmt"
	"slices"
)

// ReasonCancelReversed: a running CLUSTER MIGRATESLOTS job feeds a shard
// the desired shape no longer fills.
const ReasonCancelReversed = "cancelling slot migrations the desired shape no longer wants"

// cancelReversed cancels, on every source at once, the unfinished CLUSTER
// MIGRATESLOTS jobs whose target now holds as many slots as the even
// distribution over the desired shard count gives it, or more (a spec
// edit reversed the move: a scale-out undone before it finished, and
// letting the jobs run would only move those slots back afterwards), or
// whose target is leaving, gone or already forgotten (the jobs could only
// fail, after Valkey's own timeout). A
// cancelled job leaves each slot wholly with its source or wholly with
// its target, never split, and the next plan moves from wherever they
// are. Jobs still needed run on (migrations waits for them).
func (w *world) cancelReversed() ([]Action, bool) {
	counts := map[int]int{}
	for _, idx := range w.liveShards() {
		if p := w.designated(idx); p != nil {
			counts[idx] = p.selfSlots()
		}
	}
	targets := BalanceTargets(counts, w.in.Shards)
	var out []Action
	for _, n := range w.liveNodes() {
		if !n.isPrimary() {
			continue
		}
		i := slices.IndexFunc(n.View.Exports, func(e Export) bool {
			t := w.byID[e.TargetID]
			if t == nil {
				return true // forgotten, or never one of this cluster's nodes
			}
			want, known := targets[t.ShardIndex]
			return t.leaving() || t.dead() || (known && counts[t.ShardIndex] >= want)
		})
		if i < 0 {
			continue
		}
		e := n.View.Exports[i]
		out = append(out, Action{Kind: KindCancelMigrations, Tier: TierTopology, Reason: ReasonCancelReversed,
			Detail:           fmt.Sprintf("%s -> %s slots %s", n.Name, w.label(e.TargetID), FormatRanges(e.Slots)),
			CancelMigrations: &NodeRef{Node: n.Name}})
	}
	return out, len(out) > 0
}
