package topology

import "fmt"

// bootstrap forms a new cluster, each phase in one wave: create every node,
// introduce the nodes to each other, give every shard its slots, attach
// every replica, mark every synced node Active.
func (w *world) bootstrap() ([]Action, bool) {
	members := w.bootstrapMembers()
	if creates := w.createBootstrapNodes(members); len(creates) > 0 {
		return creates, true
	}
	if acts := w.introduce(members); len(acts) > 0 {
		return acts, true
	}
	primaries, acts := w.shardPrimaries()
	if len(acts) > 0 {
		return acts, true
	}
	adds := w.freeSlotAdds(primaries)
	// A slot looks free only once every node agrees on what is assigned:
	// one that has not heard of an assignment yet would make it look free.
	// Attaching a replica touches no slot, so it needs no agreement and
	// goes in the same wave: its sync then starts while the slots' news
	// spreads.
	if len(adds) > 0 && !w.slotsAgree() {
		return []Action{wait(TierBootstrap, "waiting for nodes to agree on assigned slots", "")}, true
	}
	attach, notes := attachBootstrapReplicas(members, primaries)
	if len(adds)+len(attach) > 0 {
		return append(adds, attach...), true
	}
	if a, ok := notes.get(); ok {
		return []Action{a}, true
	}
	if un := w.unassigned(); len(un) > 0 {
		return []Action{wait(TierBootstrap, "slots left unassigned", FormatRanges(un))}, true
	}
	if acts := activateSynced(members, primaries); len(acts) > 0 {
		return acts, true
	}
	if ok, why := w.formed(); !ok {
		return []Action{wait(TierBootstrap, "waiting for the cluster to agree", why)}, true
	}
	return []Action{done(ReasonFormed)}, true
}

// createBootstrapNodes creates the nodes members lack, if any.
func (w *world) createBootstrapNodes(members []*node) []Action {
	S, R := w.in.Shards, w.in.ReplicasPerShard
	total := len(members)
	if total >= S*(1+R) {
		return nil
	}
	counts := make([]int, S)
	for _, n := range members {
		counts[n.ShardIndex]++
	}
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
	return creates
}

// introduce waits for every member's pod, then has the members meet and
// waits until each knows the others; nil once they all do.
func (w *world) introduce(members []*node) []Action {
	for _, n := range members {
		if !n.live() || n.Pod.IP == "" {
			return []Action{waitForPod(TierBootstrap, n)}
		}
	}
	if meets := w.meetAll(TierBootstrap, members); len(meets) > 0 {
		return meets
	}
	for _, n := range members {
		if !w.met(n) {
			return []Action{wait(TierBootstrap, "waiting for nodes to learn each other", n.Name)}
		}
	}
	return nil
}

// shardPrimaries are the primaries the shards form around, by shard index;
// a shard without a candidate yet is waited for instead.
func (w *world) shardPrimaries() ([]*node, []Action) {
	primaries := make([]*node, w.in.Shards)
	for i := range primaries {
		if primaries[i] = w.designated(i); primaries[i] == nil {
			return nil, []Action{wait(TierBootstrap, "no primary candidate in shard", fmt.Sprint(i))}
		}
	}
	return primaries, nil
}

// freeSlotAdds gives each shard's primary the slots of its even share that
// nobody holds.
func (w *world) freeSlotAdds(primaries []*node) []Action {
	plan := EvenPlan(len(primaries))
	var adds []Action
	for i, p := range primaries {
		missing := rangesOf(func(s int) bool {
			return s >= plan[i].Start && s <= plan[i].End && w.owner[s] == 0
		})
		if len(missing) > 0 {
			adds = append(adds, Action{Kind: KindAddSlots, Tier: TierBootstrap, Reason: "assigning slots",
				Detail:   fmt.Sprintf("shard %d", i),
				AddSlots: &AddSlots{Node: p.Name, Ranges: missing}})
		}
	}
	return adds
}

// attachBootstrapReplicas makes every other member a replica of its
// shard's primary; a member holding slots is noted and left alone.
func attachBootstrapReplicas(members, primaries []*node) ([]Action, noted) {
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
	return attach, notes
}

// activateSynced marks Active every joining primary and every joining
// replica done with its initial sync, or else waits for the first not done.
func activateSynced(members, primaries []*node) []Action {
	var activate []Action
	var notes noted
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
		return activate
	}
	if a, ok := notes.get(); ok {
		return []Action{a}
	}
	return nil
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
