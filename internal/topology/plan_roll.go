package topology

import (
	"fmt"
	"slices"
)

// roll replaces outdated nodes, one shard at a time in index order:
// add an up-to-date replica, retire an outdated replica whenever the shard
// is above target, and fail the primary over once onto an up-to-date
// replica.
func (w *world) roll() (Action, bool) {
	target := -1
	for _, idx := range w.liveShards() {
		if slices.ContainsFunc(w.shardMembers(idx), func(n *node) bool { return n.Outdated }) {
			target = idx
			break
		}
	}
	if target < 0 {
		return Action{}, false
	}
	if w.in.HoldRoll != "" {
		return waitOn(TierUpdate, CauseRolloutWaiting, w.in.HoldRoll, ""), true
	}
	for _, n := range w.nodes {
		if n.ShardIndex != target && !n.dead() && (n.joining() || n.leaving()) {
			return wait(TierUpdate, "waiting for other shards to settle before rolling", n.Name), true
		}
	}
	members := w.shardMembers(target)
	for _, n := range members {
		if n.joining() && n.live() && n.Outdated && n.selfSlots() == 0 {
			// Created for a spec that changed again before it could join
			// (a replica that could not load a newer primary's data, say):
			// it holds nothing, and waiting for it may never end.
			return markLeaving(TierUpdate, n, ReasonRetireOutdatedJoiner), true
		}
		if n.joining() && n.live() {
			return wait(TierUpdate, "waiting for replacement node to join", n.Name), true
		}
		if !n.live() {
			return waitForPod(TierUpdate, n), true
		}
	}
	p := w.designated(target)
	if p == nil {
		return wait(TierUpdate, "no primary in shard", fmt.Sprint(target)), true
	}
	var reps, outdated, fresh []*node
	for _, n := range members {
		if n == p {
			continue
		}
		reps = append(reps, n)
		if n.Outdated {
			outdated = append(outdated, n)
		} else {
			fresh = append(fresh, n)
		}
	}
	R := w.in.ReplicasPerShard
	if len(reps) > R && len(outdated) > 0 {
		return markLeaving(TierUpdate, outdated[0], "retiring outdated replica"), true
	}
	if p.Outdated && len(fresh) > 0 {
		return w.handOver(p, fresh), true
	}
	if len(reps) <= R {
		return createNode(TierUpdate, target, JoinReplica, "creating replacement node"), true
	}
	return wait(TierUpdate, "waiting for shard to settle", fmt.Sprint(target)), true
}

// handOver moves an outdated primary's slots to an up-to-date replica that
// has caught up, or says which replica the roll waits for.
func (w *world) handOver(p *node, fresh []*node) Action {
	var unnamed *node
	for _, n := range fresh {
		if !n.isReplicaOf(p.id) || !w.healthy(n) || !n.View.LinkUp || !n.View.SyncDone {
			continue
		}
		// A node that has heard a peer only through an unacknowledged
		// handshake, or lost its name to a reply without extensions,
		// tells clients "?" for it: the slots would have no address.
		if !w.met(n) {
			unnamed = n
			continue
		}
		return Action{Kind: KindFailover, Tier: TierUpdate, Reason: ReasonRollFailover,
			Detail:   fmt.Sprintf("%s replaces %s", n.Name, p.Name),
			Failover: &Failover{Node: n.Name, Mode: FailoverDefault}}
	}
	if unnamed != nil {
		return wait(TierUpdate, ReasonPeerNameUnknown, unnamed.Name)
	}
	return wait(TierUpdate, "waiting for an up-to-date replica to catch up", fresh[0].Name)
}
