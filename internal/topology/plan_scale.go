package topology

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// finishLeaving takes nodes marked Leaving (by scale-in, a roll or cleanup)
// out of the cluster: hand the primary role away if needed, forget
// everywhere, delete. Replicas go before primaries so a primary is never
// forgotten by its own replica.
func (w *world) finishLeaving() (Action, bool) {
	var leaving []*node
	for _, n := range w.nodes {
		if n.leaving() && !n.dead() {
			leaving = append(leaving, n)
		}
	}
	slices.SortStableFunc(leaving, func(a, b *node) int {
		return boolFirst(!a.isPrimary(), !b.isPrimary())
	})
	var notes noted
	for _, n := range leaving {
		tier := w.departureTier(n)
		if w.inDepartureGrace(n) {
			// Not a note: its grace holds up nothing else; settled says
			// what is left to wait for.
			continue
		}
		if n.selfSlots() > 0 {
			var to *node
			for _, r := range w.replicasFollowing(n.id) {
				if !r.leaving() && !r.Outdated && w.healthy(r) && r.View.LinkUp && r.View.SyncDone {
					to = r
					break
				}
			}
			if to == nil && !w.hasSuccessor(n) {
				// It was retired as a replica and promoted since: no
				// replica that could take the role from it is coming (an
				// outdated one never is, the roll replaces it), so it
				// stays, and the roll treats it as any outdated primary.
				return Action{Kind: KindMarkActive, Tier: TierStability, Reason: ReasonKeepPromotedLeaver,
					Detail: n.Name, MarkActive: &NodeRef{Node: n.Name}}, true
			}
			if to == nil {
				notes.add(wait(tier, "leaving node still holds slots", n.Name))
				continue
			}
			return Action{Kind: KindFailover, Tier: tier, Reason: "moving the primary role off a leaving node",
				Detail: fmt.Sprintf("%s replaces %s", to.Name, n.Name), Failover: &Failover{Node: to.Name, Mode: FailoverDefault}}, true
		}
		if n.id != "" && w.knownByTargets(n.id) {
			return Action{Kind: KindForget, Tier: tier, Reason: "forgetting leaving node",
				Detail: n.Name, Forget: &Forget{NodeID: n.id, Node: n.Name, On: w.forgetTargets(n.id)}}, true
		}
		if n.unknown() && n.id == "" {
			notes.add(waitForPod(tier, n))
			continue
		}
		return Action{Kind: KindDeleteNode, Tier: tier, Reason: "deleting departed node",
			Detail: n.Name, DeleteNode: &NodeRef{Node: n.Name}}, true
	}
	return notes.get()
}

// hasSuccessor: some live up-to-date replica that is not leaving follows
// n, so the role can be handed to it once it has synced.
func (w *world) hasSuccessor(n *node) bool {
	return slices.ContainsFunc(w.replicasFollowing(n.id), func(r *node) bool { return !r.leaving() && !r.Outdated })
}

// DepartureGrace is how long a node retired by scale-in (or as a surplus
// replica) stays in the cluster after it was marked Leaving. Clients still
// routing a moved slot's requests to it get MOVED from it and learn the new
// owner (a primary that gave away its last slot by an atomic move stays an
// empty primary, see MigrateSlots.EmptiesSource, and one drained by the
// classic path is by then a replica of the node that took it: either
// redirects the same way); were it forgotten and stopped at once, a
// request on its way would fail on the closed connection instead. A roll's
// outdated node needs none: it leaves only after a failover the clients
// have followed.
const DepartureGrace = 5 * time.Second

// inDepartureGrace: n holds no slot and was marked Leaving, not for a roll,
// less than DepartureGrace ago.
func (w *world) inDepartureGrace(n *node) bool {
	return n.leaving() && !n.Outdated && n.selfSlots() == 0 &&
		!n.LeavingSince.IsZero() && !w.in.Now.IsZero() && w.in.Now.Sub(n.LeavingSince) < DepartureGrace
}

// retireDrained marks the nodes of a shard emptied by scale-in Leaving, one
// per tick, replicas first.
func (w *world) retireDrained() (Action, bool) {
	shards := w.liveShards()
	if len(shards) <= w.in.Shards {
		return Action{}, false
	}
	for i := len(shards) - 1; i >= 0; i-- {
		idx := shards[i]
		if w.slotsOf(idx) > 0 {
			continue
		}
		members := w.shardMembers(idx)
		if slices.ContainsFunc(members, func(n *node) bool { return n.selfSlots() > 0 }) {
			continue
		}
		p := w.designated(idx)
		victim := members[0]
		for _, n := range members {
			if n != p {
				victim = n
				break
			}
		}
		return markLeaving(TierTopology, victim, "retiring drained shard"), true
	}
	return Action{}, false
}

// moves migrates slots towards the even distribution over the desired
// number of shards; on scale-in this drains the smallest shard first. On
// Valkey >= 9 one wave starts the whole rebalance, one CLUSTER MIGRATESLOTS
// per source and target; the classic path moves one batch per source and
// target pair, every pair at once.
func (w *world) moves() ([]Action, bool) {
	R := w.in.ReplicasPerShard
	primaries, counts, targets := w.balance()
	var list []ShardSlots
	for idx, p := range primaries {
		members := w.shardMembers(idx)
		settled := !slices.ContainsFunc(members, (*node).joining)
		list = append(list, ShardSlots{
			Key:    idx,
			Slots:  p.View.Slots,
			Target: targets[idx],
			// A receiver must say cluster_state:ok itself: a new primary
			// stays "fail" until it has learnt every slot's owner and for
			// two seconds after start, and answers CLUSTERDOWN to the
			// clients redirected to the slots it just received.
			CanReceive: w.healthy(p) && w.met(p) && settled && p.View.ClusterOK &&
				(counts[idx] > 0 || len(members) >= 1+R),
		})
	}
	if a := scaleInHeadroom(primaries, targets); a != nil {
		return []Action{*a}, true
	}
	const reason = "moving slots towards even distribution"
	method := MigrationAtomic
	if !w.in.AtomicMigration {
		method = MigrationClassic
	}
	var out []Action
	transfers := PlanTransfers(list)
	if len(transfers) == 0 {
		if p := unreadyReceiver(primaries, counts, targets); p != nil {
			return []Action{wait(TierTopology, ReasonReceiverNotReady, p.Name)}, true
		}
	}
	leaving := map[int]int{} // source shard -> slots this wave moves off it
	for i, t := range transfers {
		if method == MigrationClassic {
			// Classic moves are driven slot by slot from here, so each
			// pair moves one batch per wave and the plan is redone with
			// what the nodes then report.
			t.Slots = TopSlots(t.Slots, w.batch)
			transfers[i] = t
		}
		leaving[t.From] += CountSlots(t.Slots)
	}
	for _, t := range transfers {
		a := w.migrateRanges(primaries[t.From], primaries[t.To], t.Slots, method, reason)
		// The classic path needs no such care: it announces each slot's
		// new owner to every primary with SETSLOT NODE itself.
		a.MigrateSlots.EmptiesSource = method == MigrationAtomic && leaving[t.From] >= counts[t.From]
		out = append(out, a)
	}
	return out, len(out) > 0
}

// unreadyReceiver is a primary short of its target that is not yet in
// cluster_state:ok by its own account, the first by shard index.
func unreadyReceiver(primaries map[int]*node, counts, targets map[int]int) *node {
	for _, idx := range slices.Sorted(maps.Keys(primaries)) {
		if p := primaries[idx]; counts[idx] < targets[idx] && !p.View.ClusterOK {
			return p
		}
	}
	return nil
}

// balance is each live shard's primary, the slots it holds and the slots
// it should end up with in the desired shape.
func (w *world) balance() (primaries map[int]*node, counts, targets map[int]int) {
	primaries, counts = map[int]*node{}, map[int]int{}
	for _, idx := range w.liveShards() {
		p := w.designated(idx)
		if p == nil {
			continue
		}
		primaries[idx] = p
		counts[idx] = p.selfSlots()
	}
	return primaries, counts, BalanceTargets(counts, w.in.Shards)
}

// addShards creates every missing node of every new shard in one wave.
func (w *world) addShards() ([]Action, bool) {
	shards := w.liveShards()
	if len(shards) > w.in.Shards {
		return nil, false
	}
	var out []Action
	for _, idx := range shards {
		if w.slotsOf(idx) > 0 {
			continue
		}
		for c := len(w.shardMembers(idx)); c < 1+w.in.ReplicasPerShard; c++ {
			out = append(out, createNode(TierTopology, idx, JoinShard, "adding shard"))
		}
	}
	for _, idx := range w.freeIndices(w.in.Shards - len(shards)) {
		for range 1 + w.in.ReplicasPerShard {
			out = append(out, createNode(TierTopology, idx, JoinShard, "adding shard"))
		}
	}
	return out, len(out) > 0
}
