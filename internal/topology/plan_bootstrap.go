package topology

import "fmt"

// bootstrap forms a new cluster, each phase in one wave: create every node,
// introduce every node to one seed, give every shard its slots, attach every
// replica, mark every synced node Active.
func (w *world) bootstrap() ([]Action, bool) {
	S, R := w.in.Shards, w.in.ReplicasPerShard
	counts := make([]int, S)
	total := 0
	for _, n := range w.nodes {
		if n.ShardIndex < S && !n.leaving() && !n.dead() {
			counts[n.ShardIndex]++
			total++
		}
	}
	if total < S*(1+R) {
		// Round by round over the shards, so names and pods spread the same
		// way whichever part of the wave lands first.
		var creates []Action
		for round := range 1 + R {
			for i := range S {
				if counts[i] > round {
					continue
				}
				total++
				creates = append(creates, Action{Kind: KindCreateNode, Tier: TierBootstrap, Reason: "creating node",
					Detail:     fmt.Sprintf("%d of %d", total, S*(1+R)),
					CreateNode: &CreateNode{ShardIndex: i, JoinType: JoinNone}})
			}
		}
		return creates, true
	}
	members := w.bootstrapMembers()
	for _, n := range members {
		if !n.live() || n.Pod.IP == "" {
			return []Action{waitForPod(TierBootstrap, n)}, true
		}
	}
	if meets := w.meetAll(TierBootstrap, members); len(meets) > 0 {
		return meets, true
	}
	for _, n := range members {
		if !w.met(n) {
			return []Action{wait(TierBootstrap, "waiting for nodes to learn each other", n.Name)}, true
		}
	}
	plan := EvenPlan(S)
	primaries := make([]*node, S)
	var adds []Action
	for i := range S {
		p := w.designated(i)
		if p == nil {
			return []Action{wait(TierBootstrap, "no primary candidate in shard", fmt.Sprint(i))}, true
		}
		primaries[i] = p
		missing := rangesOf(func(s int) bool {
			return s >= plan[i].Start && s <= plan[i].End && w.owner[s] == ""
		})
		if len(missing) > 0 {
			adds = append(adds, Action{Kind: KindAddSlots, Tier: TierBootstrap, Reason: "assigning slots",
				Detail:   fmt.Sprintf("shard %d", i),
				AddSlots: &AddSlots{Node: p.Name, Ranges: missing}})
		}
	}
	// A slot looks free only once every node agrees on what is assigned:
	// one that has not heard of an assignment yet would make it look free.
	// Attaching a replica touches no slot, so it needs no agreement and
	// goes in the same wave: its sync then starts while the slots' news
	// spreads.
	if len(adds) > 0 && !w.slotsAgree() {
		return []Action{wait(TierBootstrap, "waiting for nodes to agree on assigned slots", "")}, true
	}
	var attach []Action
	var notes noted
	for _, n := range members {
		p := primaries[n.ShardIndex]
		if n == p || n.isReplicaOf(p.id) {
			continue
		}
		if n.selfSlots() > 0 {
			notes.add(wait(TierBootstrap, "node outside its shard holds slots", n.Name))
			continue
		}
		attach = append(attach, replicate(TierBootstrap, n, p))
	}
	if len(adds)+len(attach) > 0 {
		return append(adds, attach...), true
	}
	if a, ok := notes.get(); ok {
		return []Action{a}, true
	}
	if un := w.unassigned(); len(un) > 0 {
		return []Action{wait(TierBootstrap, "slots left unassigned", FormatRanges(un))}, true
	}
	var activate []Action
	for _, n := range members {
		if !n.joining() {
			continue
		}
		p := primaries[n.ShardIndex]
		if n == p || (n.View.LinkUp && n.View.SyncDone) {
			activate = append(activate, markActive(TierBootstrap, n))
			continue
		}
		notes.add(wait(TierBootstrap, "waiting for initial sync", n.Name))
	}
	if len(activate) > 0 {
		return activate, true
	}
	if a, ok := notes.get(); ok {
		return []Action{a}, true
	}
	if ok, why := w.formed(); !ok {
		return []Action{wait(TierBootstrap, "waiting for the cluster to agree", why)}, true
	}
	return []Action{done(ReasonFormed)}, true
}

// meetAll introduces every node of ns to every other it has not started
// to know, all in one wave, each node meeting those listed before it: with
// every pair met directly, the cluster forms after one handshake instead of
// the rounds of gossip a single seed would need (about a second for a few
// nodes, more for many).
func (w *world) meetAll(tier Tier, ns []*node) []Action {
	var out []Action
	for i, n := range ns {
		if w.met(n) {
			continue
		}
		var seeds []*node
		for _, s := range ns[:i] {
			if !connected(n, s) {
				seeds = append(seeds, s)
			}
		}
		if len(seeds) > 0 {
			out = append(out, meet(tier, n, seeds...))
		}
	}
	return out
}

// bootstrapMembers are the nodes bootstrap builds the cluster from.
func (w *world) bootstrapMembers() []*node {
	var out []*node
	for _, n := range w.nodes {
		if n.ShardIndex < w.in.Shards && !n.leaving() && !n.dead() {
			out = append(out, n)
		}
	}
	return out
}

// formed checks that the cluster has formed: every node sees a complete,
// healthy cluster with one slot-holding primary per shard, each with its
// replicas. When not, it says what is missing.
func (w *world) formed() (bool, string) {
	if !w.allAgree() {
		return false, "not every node sees a complete, healthy cluster"
	}
	if len(w.holders) != w.in.Shards {
		return false, fmt.Sprintf("%d slot-holding primaries, want %d", len(w.holders), w.in.Shards)
	}
	for _, id := range w.holders {
		if r := len(w.replicasFollowing(id)); r < w.in.ReplicasPerShard {
			return false, fmt.Sprintf("%s has %d replicas, want %d", w.label(id), r, w.in.ReplicasPerShard)
		}
	}
	return true, ""
}
