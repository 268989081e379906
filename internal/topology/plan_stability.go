package topology

import (
	"cmp"
	"fmt"
	"slices"
)

// handOvers fails over, in one wave, every slot-holding primary whose pod is
// stopping, each to its best replica that has finished its sync. The pod's
// preStop hold keeps the primary serving meanwhile, so the replica catches
// up (a default CLUSTER FAILOVER pauses the primary's writers until it has)
// and clients are redirected with no write lost. A primary with no such
// replica is left to primaries, which waits for its pod to go.
func (w *world) handOvers() ([]Action, bool) {
	var out []Action
	for _, id := range w.holders {
		p := w.byID[id]
		if p == nil || p.Pod.Phase != PodStopping || w.failFlag[id] {
			continue
		}
		for _, r := range w.takeoverCandidates(id, p) {
			if r.View.LinkUp && r.View.SyncDone {
				out = append(out, Action{Kind: KindFailover, Tier: TierStability, Reason: ReasonHandOver,
					Detail:   fmt.Sprintf("%s takes over from %s", r.Name, p.Name),
					Failover: &Failover{Node: r.Name, Mode: FailoverDefault}})
				break
			}
		}
	}
	return out, len(out) > 0
}

// primaries makes sure every slot-holding primary is healthy.
func (w *world) primaries() (Action, bool) {
	var notes noted
	holders := slices.Clone(w.holders)
	slices.SortFunc(holders, func(a, b string) int {
		return cmp.Or(cmp.Compare(w.indexOf(a), w.indexOf(b)), cmp.Compare(a, b))
	})
	for _, id := range holders {
		m := w.byID[id]
		if w.healthy(m) {
			continue
		}
		name := w.label(id)
		down := w.failFlag[id] || (m != nil && m.dead()) || (m == nil && w.pfailAll[id])
		if !down {
			if m == nil {
				notes.add(wait(TierStability, "slot owner is not a member of this cluster", id))
			} else {
				notes.add(waitForPod(TierStability, m))
			}
			continue
		}
		if m != nil && m.live() {
			// A FAIL flag alone says the node stalled, not that its keys
			// are gone: while it answers, neither a takeover (which drops
			// what it acknowledged since) nor a forget (which drops all of
			// it) is safe.
			notes.add(waitOn(TierStability, CausePrimaryStalled, ReasonPrimaryFlaggedButRunning, name))
			continue
		}
		reps := w.takeoverCandidates(id, m)
		if len(reps) > 0 {
			if w.quorum() {
				notes.add(waitOn(TierStability, CauseAutoFailover, ReasonWaitAutoFailover, name))
				continue
			}
			return Action{Kind: KindFailover, Tier: TierStability, Reason: ReasonTakeover,
				Detail:   fmt.Sprintf("%s replaces %s", reps[0].Name, name),
				Failover: &Failover{Node: reps[0].Name, Mode: FailoverTakeover}}, true
		}
		if m != nil {
			if u := w.unknownIn(m.ShardIndex); u != nil {
				notes.add(waitForPod(TierStability, u))
				continue
			}
		}
		if w.knownByTargets(id) {
			return Action{Kind: KindForget, Tier: TierStability,
				Reason: "primary lost with no replica, forgetting it; a fresh primary takes its slots",
				Detail: name, Forget: &Forget{NodeID: id, On: w.forgetTargets(id)}}, true
		}
		notes.add(wait(TierStability, "lost primary is still known by its replicas", name))
	}
	return notes.get()
}

// takeoverCandidates are the healthy replicas of id, best first: same
// shard, up to date, most caught up, then by name.
func (w *world) takeoverCandidates(id string, primary *node) []*node {
	var out []*node
	for _, n := range w.replicasFollowing(id) {
		if w.healthy(n) && !n.leaving() {
			out = append(out, n)
		}
	}
	idx := -1
	if primary != nil {
		idx = primary.ShardIndex
	}
	slices.SortStableFunc(out, func(a, b *node) int {
		return cmp.Or(
			boolFirst(a.ShardIndex == idx, b.ShardIndex == idx),
			boolFirst(!a.Outdated, !b.Outdated),
			cmp.Compare(b.View.ReplOffset, a.View.ReplOffset),
			cmp.Compare(a.Name, b.Name))
	})
	return out
}

func (w *world) unknownIn(idx int) *node {
	for _, n := range w.shardMembers(idx) {
		if n.unknown() {
			return n
		}
	}
	return nil
}

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
	for _, id := range sortedStrings(ids) {
		if slices.Contains(w.holders, id) {
			continue
		}
		if m := w.byID[id]; m != nil && !m.dead() {
			continue
		}
		if w.byID[id] == nil && w.addressClaimed(ids[id]) {
			continue
		}
		if !w.knownByTargets(id) {
			continue
		}
		return Action{Kind: KindForget, Tier: TierStability, Reason: "forgetting departed node",
			Detail: w.label(id), Forget: &Forget{NodeID: id, On: w.forgetTargets(id)}}, true
	}
	for _, n := range w.nodes {
		if !n.dead() || slices.Contains(w.holders, n.id) {
			continue
		}
		if n.id != "" && w.knownByTargets(n.id) {
			continue
		}
		return Action{Kind: KindDeleteNode, Tier: w.departureTier(n), Reason: "deleting dead node",
			Detail: n.Name, DeleteNode: &NodeRef{Node: n.Name}}, true
	}
	return Action{}, false
}

// addressClaimed: a member whose node ID is not known yet runs at ip, so
// an unknown ID seen there may be that member.
func (w *world) addressClaimed(ip string) bool {
	if ip == "" {
		return false
	}
	for _, n := range w.nodes {
		if n.id == "" && !n.dead() && n.Pod.IP == ip {
			return true
		}
	}
	return false
}

// orphans gives slots nobody owns to a primary: a slot-less one waiting
// for them, else a fresh one (join type primary), else the smallest shard.
func (w *world) orphans() (Action, bool) {
	un := w.unassigned()
	if len(un) == 0 {
		return Action{}, false
	}
	// A slot looks unowned when its owner cannot be asked (stalled, or out
	// of the operator's reach) and no peer that can be asked reports it.
	// Assigning it then makes two owners, and the old one drops its keys
	// when it learns of the new one: no slot is given away while a running
	// member is silent.
	for _, n := range w.nodes {
		if n.unknown() {
			return waitForPod(TierStability, n), true
		}
	}
	if !w.slotsAgree() {
		return wait(TierStability, "waiting for nodes to agree on assigned slots", FormatRanges(un)), true
	}
	shards := w.liveShards()
	var recipient *node
	pending := false
	for _, idx := range shards {
		if w.slotsOf(idx) > 0 {
			continue
		}
		p := w.designated(idx)
		if p == nil || !w.healthy(p) || !w.met(p) {
			pending = true
			continue
		}
		if recipient == nil || (p.JoinType == JoinPrimary && recipient.JoinType != JoinPrimary) {
			recipient = p
		}
	}
	if recipient == nil && pending {
		// The new primary has to join first; coverage holds up everything
		// below stability meanwhile.
		return Action{}, false
	}
	if recipient == nil && len(shards) < w.in.Shards {
		return createNode(TierStability, w.freeIndex(), JoinPrimary, "creating fresh primary for orphaned slots"), true
	}
	if recipient == nil {
		for _, id := range w.holders {
			h := w.byID[id]
			if w.healthy(h) && (recipient == nil || CountSlots(w.ownedBy[id]) < recipient.selfSlots()) {
				recipient = h
			}
		}
	}
	if recipient == nil {
		return wait(TierStability, "no primary can take orphaned slots", FormatRanges(un)), true
	}
	return Action{Kind: KindAddSlots, Tier: TierStability, Reason: "assigning orphaned slots",
		Detail:   recipient.Name,
		AddSlots: &AddSlots{Node: recipient.Name, Ranges: un}}, true
}

// coverage keeps topology, roll and cleanup work off a cluster that does
// not serve every slot.
func (w *world) coverage() (Action, bool) {
	if un := w.unassigned(); len(un) > 0 {
		return wait(TierStability, "waiting for a new primary to take orphaned slots", FormatRanges(un)), true
	}
	return Action{}, false
}

// joins walks every Joining node through meet, replicate and activation,
// all joining nodes in one wave (each action touches its own node only). A
// join that cannot progress (pod pending, gossip or sync under way) holds
// nothing else up: cleanup may be what removes a node that will never be
// scheduled, and settled reports it when nothing else is left to do.
func (w *world) joins() ([]Action, bool) {
	var out []Action
	for _, n := range w.nodes {
		if !n.joining() || !n.live() {
			continue
		}
		tier := w.joinTier(n)
		if !w.met(n) {
			if seed := w.seedFor(n); seed != nil && !connected(n, seed) {
				out = append(out, meet(tier, n, seed))
			}
			continue
		}
		p := w.designated(n.ShardIndex)
		switch {
		case p == n:
			out = append(out, markActive(tier, n))
		case p == nil || n.selfSlots() > 0 || !w.healthy(p):
			continue
		case n.isReplicaOf(p.id):
			if n.View.LinkUp && n.View.SyncDone {
				out = append(out, markActive(tier, n))
			}
		default:
			out = append(out, replicate(tier, n, p))
		}
	}
	return out, len(out) > 0
}

// replicaCounts reattaches stray replicas and tops every slot-holding shard
// up to replicasPerShard, every shard in one wave. Reattaching
// comes first: a stray is a member the shard already counts.
func (w *world) replicaCounts() ([]Action, bool) {
	var attach, creates []Action
	for _, idx := range w.liveShards() {
		p := w.designated(idx)
		if p == nil || p.selfSlots() == 0 {
			continue
		}
		members := w.shardMembers(idx)
		for _, n := range members {
			if n == p || n.joining() || !n.live() || !w.met(n) || n.isReplicaOf(p.id) || n.selfSlots() > 0 || !w.healthy(p) {
				continue
			}
			attach = append(attach, replicate(TierStability, n, p))
		}
		for reps := len(members) - 1; reps < w.in.ReplicasPerShard; reps++ {
			creates = append(creates, createNode(TierStability, idx, JoinReplica, "restoring replica count"))
		}
	}
	if len(attach) > 0 {
		return attach, true
	}
	return creates, len(creates) > 0
}
