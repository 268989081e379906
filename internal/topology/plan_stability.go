package topology

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// handOvers fails over a slot-holding primary whose pod is stopping to its
// best replica that has finished its sync. The pod's preStop hold keeps the
// primary serving meanwhile, so the replica catches up (a default CLUSTER
// FAILOVER pauses the primary's writers until it has) and clients are
// redirected with no write lost. One primary at a time: each replica
// starts its election in the next epoch and every primary votes once per
// epoch, so two hand-overs at once split the votes and one of them never
// completes (a drained Kubernetes node holding two primaries of a 2-shard
// cluster loses its second shard's writes until a takeover). Each takes
// well under a second, so the hold covers several. A primary with no such
// replica, or whose process already exited, is left to primaries.
func (w *world) handOvers() ([]Action, bool) {
	for _, id := range w.holders {
		p := w.byID[id]
		if p == nil || p.Pod.Phase != PodStopping || w.failFlag[id] {
			continue
		}
		reps, _ := w.takeoverCandidates(id, p)
		for _, r := range reps {
			if r.View.LinkUp && r.View.SyncDone {
				return []Action{{Kind: KindFailover, Tier: TierStability, Reason: ReasonHandOver,
					Detail:   fmt.Sprintf("%s takes over from %s", r.Name, p.Name),
					Failover: &Failover{Node: r.Name, Mode: FailoverDefault}}}, true
			}
		}
	}
	return nil, false
}

// primaries makes sure every slot-holding primary is healthy. Replacing or
// forgetting one rests on proof that its process is gone: the kubelet's
// report that its container ended, or its peers flagging it; a pod that is
// merely missing from the operator's view is not enough. It is promoted
// over only by a replica that holds its data, and lost with its keys, as
// a reported loss, only when none does.
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
		if !w.provenDown(id, m) {
			switch {
			case m == nil:
				notes.add(wait(TierStability, "slot owner is not a member of this cluster", id))
			case m.dead():
				notes.add(waitOn(TierStability, CausePodMissing, ReasonPodMissingButAnswers, name))
			default:
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
		reps, empty := w.takeoverCandidates(id, m)
		if len(reps) > 0 {
			mode, reason, now := w.promotion(m, reps)
			if !now {
				notes.add(waitOn(TierStability, CauseAutoFailover, ReasonWaitAutoFailover, name))
				continue
			}
			return Action{Kind: KindFailover, Tier: TierStability, Reason: reason,
				Detail:   fmt.Sprintf("%s replaces %s", reps[0].Name, name),
				Failover: &Failover{Node: reps[0].Name, Mode: mode}}, true
		}
		if m != nil {
			// A silent replica, one being retired included, may hold the
			// keys: nothing is given up before it answers.
			if u := w.silentIn(m.ShardIndex, true); u != nil {
				notes.add(waitForPod(TierStability, u))
				continue
			}
		}
		if len(empty) > 0 {
			// Valkey never elects a replica that holds nothing, and a
			// takeover by one would serve the slots empty as if nothing
			// happened. It goes, so the loss is reported as one.
			return Action{Kind: KindDeleteNode, Tier: TierStability, Reason: ReasonEmptyReplicaOfLostPrimary,
				Detail: fmt.Sprintf("%s (replica of %s)", empty[0].Name, name), DeleteNode: &NodeRef{Node: empty[0].Name}}, true
		}
		if w.knownByTargets(id) {
			return Action{Kind: KindForget, Tier: TierStability, LosesData: true,
				Reason: ReasonPrimaryLostNoReplica,
				Detail: name, Forget: &Forget{NodeID: id, Node: name, On: w.forgetTargets(id)}}, true
		}
		notes.add(wait(TierStability, "lost primary is still known by its replicas", name))
	}
	return notes.get()
}

// promotion decides how the best of reps replaces the lost primary m, and
// whether now. Without a majority of healthy primaries no election can
// succeed: TAKEOVER at once. With one, Valkey elects a replica by itself
// after cluster-node-timeout; the operator goes first only on the
// kubelet's word that m's process exited (FORCE, still voted on, so the
// epochs stay agreed), and takes over only once the election is overdue.
// A primary that is merely unreachable or flagged may still run, and is
// left to Valkey.
func (w *world) promotion(m *node, reps []*node) (mode FailoverMode, reason string, now bool) {
	switch {
	case !w.quorum():
		return FailoverTakeover, ReasonTakeover, true
	case electionOverdue(reps):
		return FailoverTakeover, ReasonElectionOverdue, true
	case m != nil && m.Pod.Exited:
		return FailoverForce, ReasonProcessExited, true
	}
	return "", "", false
}

// ElectionDeadline bounds the wait for Valkey's own election once a
// primary is down: detection takes cluster-node-timeout (5 s), the
// election a second or two more, so a replica whose link has been down
// three times that long was never going to be elected (it is configured
// out of elections, or its voters cannot reach it). It holds the data,
// so it takes over.
const ElectionDeadline = 20 * time.Second

// electionOverdue: the best candidate's own link has been down past
// ElectionDeadline.
func electionOverdue(reps []*node) bool {
	return time.Duration(reps[0].View.LinkDownSeconds)*time.Second >= ElectionDeadline
}

// provenDown: the slot holder id's process is known to be gone or cut
// off, from something a relabelled or uncached pod cannot fake: its peers
// flag it, or the kubelet reports its pod ended. A pod missing from the
// operator's view is proof only once the peers stopped reaching it too.
func (w *world) provenDown(id string, m *node) bool {
	if w.failFlag[id] {
		return true
	}
	if m == nil {
		return w.pfailAll[id]
	}
	switch {
	case m.Pod.Phase == PodGone:
		return true
	case m.dead():
		return w.pfailAll[id]
	default:
		return false
	}
}

// takeoverCandidates are the healthy replicas of id that hold its data,
// best first: most caught up, staying, same shard, up to date, then by
// name; and the healthy replicas that hold none (still in, or never done
// with, their first sync), which must never take its place. A replica
// being retired still counts: it may hold the only copy of the keys, and
// its retirement was decided while its primary ran.
func (w *world) takeoverCandidates(id string, primary *node) (reps, empty []*node) {
	for _, n := range w.replicasFollowing(id) {
		switch {
		case !w.healthy(n):
		case n.View.HoldsData:
			reps = append(reps, n)
		default:
			empty = append(empty, n)
		}
	}
	idx := -1
	if primary != nil {
		idx = primary.ShardIndex
	}
	slices.SortStableFunc(reps, func(a, b *node) int {
		return cmp.Or(
			cmp.Compare(b.View.ReplOffset, a.View.ReplOffset),
			boolFirst(!a.leaving(), !b.leaving()),
			boolFirst(a.ShardIndex == idx, b.ShardIndex == idx),
			boolFirst(!a.Outdated, !b.Outdated),
			cmp.Compare(a.Name, b.Name))
	})
	return reps, empty
}

// silentIn is a member of shard idx whose pod runs but which did not
// answer this tick; one being retired counts only when withLeaving.
func (w *world) silentIn(idx int, withLeaving bool) *node {
	for _, n := range w.nodes {
		if n.ShardIndex == idx && n.unknown() && (withLeaving || !n.leaving()) {
			return n
		}
	}
	return nil
}

// anyUnknown: some member's pod runs but it did not answer this tick.
func (w *world) anyUnknown() bool {
	return slices.ContainsFunc(w.nodes, (*node).unknown)
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
		if n.dead() && !w.departed(n) && n.id != "" {
			return waitOn(TierStability, CausePodMissing, ReasonPodMissingButAnswers, n.Name), true
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
		if w.cutOff(n) {
			// The smaller side (the name breaks a tie) is introduced
			// to the larger; one MEET joins both.
			seed := w.seedFor(n)
			if seed != nil && !w.claimsClash(n, seed) &&
				(len(n.peers) < len(seed.peers) || (len(n.peers) == len(seed.peers) && n.Name > seed.Name)) {
				out = append(out, meet(TierStability, n, seed))
			}
			continue
		}
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

// cutOff: n is an Active, staying node that has lost the rest of the
// cluster: it knows no other core node and none knows it (all its peers
// were forgotten while it was the last one standing, say). Gossip cannot
// bring it back; a MEET can.
func (w *world) cutOff(n *node) bool {
	if !n.live() || n.joining() || n.leaving() {
		return false
	}
	others := 0
	for _, o := range w.core() {
		if o == n {
			continue
		}
		others++
		if o.knows(n.id) || n.knows(o.id) {
			return false
		}
	}
	return others > 0
}

// claimsClash: a slot n serves is claimed by another node in seed's view.
// Valkey settles such a clash by config epoch and the loser drops its
// keys, so the two are never introduced.
func (w *world) claimsClash(n, seed *node) bool {
	claims := map[int]string{}
	note := func(id string, rs []SlotRange) {
		for _, r := range rs {
			for s := r.Start; s <= r.End; s++ {
				claims[s] = id
			}
		}
	}
	note(seed.id, seed.View.Slots)
	for id, p := range seed.peers {
		if p.Role == RolePrimary {
			note(id, p.Slots)
		}
	}
	for _, r := range n.View.Slots {
		for s := r.Start; s <= r.End; s++ {
			if id, ok := claims[s]; ok && id != n.id {
				return true
			}
		}
	}
	return false
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
