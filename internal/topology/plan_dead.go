package topology

import (
	"fmt"
	"maps"
	"slices"
)

// removeDead clears what is left of members whose process is gone: it
// forgets node IDs no member stands for any more, then deletes dead
// ValkeyNodes nobody remembers.
func (w *world) removeDead() (Action, bool) {
	ids := map[string]string{} // id -> an address it was seen at
	for _, n := range w.liveNodes() {
		for id, p := range n.peers {
			if _, ok := ids[id]; !ok || ids[id] == "" {
				ids[id] = p.IP
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		if slices.Contains(w.holders, id) {
			continue
		}
		if m := w.byID[id]; m != nil && !w.departed(m) {
			continue
		}
		if w.byID[id] == nil && w.addressClaimed(ids[id]) {
			continue
		}
		if !w.knownByTargets(id) {
			continue
		}
		return Action{Kind: KindForget, Tier: TierStability, Reason: "forgetting departed node",
			Detail: w.label(id), Forget: &Forget{NodeID: id, Node: w.label(id), On: w.forgetTargets(id)}}, true
	}
	for _, n := range w.nodes {
		if !n.dead() || slices.Contains(w.holders, n.id) {
			continue
		}
		if n.id != "" && w.knownByTargets(n.id) {
			continue
		}
		if !w.departed(n) && (w.knownByLive(n.id) || w.anyUnknown()) {
			// Its pod is missing but someone may still reach it: a peer
			// that knows it, or one the operator cannot ask this tick.
			continue
		}
		if n.volumeLost != "" {
			return Action{Kind: KindDeleteNode, Tier: w.departureTier(n), Reason: ReasonVolumeLost,
				Detail: n.Name + ": " + n.volumeLost, DeleteNode: &NodeRef{Node: n.Name}}, true
		}
		return Action{Kind: KindDeleteNode, Tier: w.departureTier(n), Reason: "deleting dead node",
			Detail: n.Name, DeleteNode: &NodeRef{Node: n.Name}}, true
	}
	if n := w.strandedReplica(); n != nil {
		return Action{Kind: KindDeleteNode, Tier: TierStability, Reason: ReasonStrandedReplica,
			Detail: fmt.Sprintf("%s (replica of %s)", n.Name, w.label(n.View.PrimaryID)), DeleteNode: &NodeRef{Node: n.Name}}, true
	}
	return Action{}, false
}

// strandedReplica is a live replica whose primary is gone for good and
// held no slot, in a shard with no primary to follow instead: it holds no
// key and can become nothing (Valkey has no way to turn a replica back
// into an empty primary but a reset), so it goes and its shard is made
// anew.
func (w *world) strandedReplica() *node {
	for _, n := range w.nodes {
		if !n.live() || n.isPrimary() || n.selfSlots() > 0 || w.designated(n.ShardIndex) != nil {
			continue
		}
		pid := n.View.PrimaryID
		if slices.Contains(w.holders, pid) {
			continue
		}
		m := w.byID[pid]
		if (m == nil && (w.failFlag[pid] || w.pfailAll[pid])) || (m != nil && w.departed(m)) {
			return n
		}
	}
	return nil
}

// departed: a member's process is gone for good, on proof: its pod ended,
// or its pod is missing and either the operator retired it or its peers
// no longer reach it. A pod relabelled out of the operator's view while
// its process serves is none of these.
func (w *world) departed(m *node) bool {
	switch {
	case m.Pod.Phase == PodGone:
		return true
	case !m.dead():
		return false
	default:
		return m.leaving() || w.failFlag[m.id] || w.pfailAll[m.id]
	}
}

// knownByLive: some live member, a replica of id included, knows id.
func (w *world) knownByLive(id string) bool {
	for _, n := range w.liveNodes() {
		if n.knows(id) {
			return true
		}
	}
	return false
}
