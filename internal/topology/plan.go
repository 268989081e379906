package topology

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// FailoverGrace is how long a requested CLUSTER FAILOVER is given to flip
// roles before the planner may ask again: Valkey's manual-failover timeout
// (5 s) plus the election and the gossip that lets every node see it.
const FailoverGrace = 15 * time.Second

// Plan returns the wave of actions to run now for the cluster described by
// in, or a wave holding only Done when it has its desired shape, or only a
// Wait with the reason nothing can be done this tick. It keeps no state: the
// same input always yields the same answer.
//
// The steps run in priority order and the first that has something to say
// decides the wave; a step that widens (bootstrap, joins, replica counts,
// new shards, atomic moves) returns every independent action it finds.
func Plan(in Input) Wave {
	if in.Shards < 1 || in.ReplicasPerShard < 0 {
		return waveOf(wait(TierSteady, "invalid desired shape",
			fmt.Sprintf("shards=%d replicasPerShard=%d", in.Shards, in.ReplicasPerShard)))
	}
	w := newWorld(in)
	steps := []func() ([]Action, bool){w.handOvers, one(w.primaries), one(w.redirectMigrations), one(w.departed)}
	if in.Creating {
		steps = append(steps, w.bootstrap)
	} else {
		steps = append(steps,
			one(w.orphans), w.joins, w.replicaCounts, one(w.coverage), // stability
			w.cancelReversed, one(w.migrations), one(w.replicaSlotStates), one(w.departures), one(w.retireDrained), w.moves, w.addShards, // topology
			one(w.roll),    // updates
			one(w.cleanup), // cleanup
			one(w.settled))
	}
	for _, step := range steps {
		if as, ok := step(); ok && len(as) > 0 {
			return w.finish(as)
		}
	}
	return waveOf(wait(TierSteady, "waiting for the cluster to settle", ""))
}

// one adapts a step that decides a single action.
func one(step func() (Action, bool)) func() ([]Action, bool) {
	return func() ([]Action, bool) {
		a, ok := step()
		if !ok {
			return nil, false
		}
		return []Action{a}, true
	}
}

// finish applies the per-action guards and keeps the wave's shape: held
// actions turn into Waits, which only stand alone.
func (w *world) finish(as []Action) Wave {
	out := make([]Action, 0, len(as))
	var held *Action
	for _, a := range as {
		a = w.noteFailedMigration(w.holdRepeatedFailover(a))
		if a.Kind == KindWait || a.Kind == KindDone {
			if held == nil {
				held = &a
			}
			continue
		}
		out = append(out, a)
	}
	if len(out) == 0 && held != nil {
		return waveOf(*held)
	}
	return Wave{Actions: out}
}

// noteFailedMigration marks an atomic slot move whose source's last
// attempt failed as a retry and says why it failed, so the failure is seen
// (and the retry paced) rather than the command silently re-issued.
func (w *world) noteFailedMigration(a Action) Action {
	if a.Kind != KindMigrateSlots || a.MigrateSlots.Method != MigrationAtomic {
		return a
	}
	src := w.byName[a.MigrateSlots.From]
	if src == nil || src.View == nil || src.View.AtomicMigrationFailure == "" {
		return a
	}
	a.Reason = ReasonRetryMigration
	a.Detail += "; last attempt: " + src.View.AtomicMigrationFailure
	return a
}

// holdRepeatedFailover turns a Failover on a node that was asked to fail over
// less than FailoverGrace ago into a Wait. Roles flip only after the replica
// has caught up and won its election, so until then every view still shows
// the old primary and the step that asked would ask again: one failover per
// primary means remembering the request (in the API, so a restarted
// operator remembers it too).
func (w *world) holdRepeatedFailover(a Action) Action {
	if a.Kind != KindFailover {
		return a
	}
	n := w.byName[a.Failover.Node]
	if n == nil || n.FailoverRequested.IsZero() || w.in.Now.IsZero() {
		return a
	}
	if age := w.in.Now.Sub(n.FailoverRequested); age >= 0 && age < FailoverGrace {
		return wait(a.Tier, ReasonFailoverInFlight, a.Detail)
	}
	return a
}

// noted remembers the first reason a step skipped something, so the final
// Wait can say what the cluster is waiting for.
type noted struct{ first *Action }

func (n *noted) add(a Action) {
	if n.first == nil {
		n.first = &a
	}
}

func (n *noted) get() (Action, bool) {
	if n.first == nil {
		return Action{}, false
	}
	return *n.first, true
}

func pendingDetail(n *node) string {
	if n.Pod.Unschedulable != "" {
		return fmt.Sprintf("%s: %s", n.Name, n.Pod.Unschedulable)
	}
	return n.Name
}

func waitForPod(tier Tier, n *node) Action {
	if n.Pod.Unschedulable != "" {
		reason := ReasonPodUnschedulable
		if tier == TierBootstrap {
			reason = ReasonUnschedulable
		}
		return wait(tier, reason, pendingDetail(n))
	}
	if n.pending() {
		return wait(tier, ReasonPodPending, n.Name)
	}
	if n.Pod.Phase == PodStopping {
		return wait(tier, ReasonPodStopping, n.Name)
	}
	return wait(tier, ReasonNodeSilent, n.Name)
}

func (w *world) label(id string) string {
	if n := w.byID[id]; n != nil {
		return n.Name
	}
	return id
}

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

// primaries makes sure every slot-holding primary is healthy (§2.1 1.1).
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
			notes.add(wait(TierStability, ReasonPrimaryFlaggedButRunning, name))
			continue
		}
		reps := w.takeoverCandidates(id, m)
		if len(reps) > 0 {
			if w.quorum() {
				notes.add(wait(TierStability, ReasonWaitAutoFailover, name))
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

func (w *world) indexOf(id string) int {
	if n := w.byID[id]; n != nil {
		return n.ShardIndex
	}
	return -1
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

// boolFirst orders true before false.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

func (w *world) unknownIn(idx int) *node {
	for _, n := range w.shardMembers(idx) {
		if n.unknown() {
			return n
		}
	}
	return nil
}

// departed forgets node IDs no member stands for any more, then deletes
// dead ValkeyNodes nobody remembers (§2.1 1.2).
func (w *world) departed() (Action, bool) {
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

// lifecycleTier is the work a node in motion belongs to, so a wait on it
// keeps that work's state and Degraded condition instead of flickering to
// steady between its steps; a settled node that does not answer is none.
func (w *world) lifecycleTier(n *node) Tier {
	switch {
	case n.joining():
		return w.joinTier(n)
	case n.leaving():
		return w.departureTier(n)
	default:
		return TierSteady
	}
}

func (w *world) departureTier(n *node) Tier {
	switch {
	case !n.leaving():
		return TierStability
	case n.Outdated:
		return TierUpdate
	default:
		return TierTopology
	}
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

func sortedStrings[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

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
	if !w.slotsAgree() {
		return []Action{wait(TierBootstrap, "waiting for nodes to agree on assigned slots", "")}, true
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
	if len(adds) > 0 {
		return adds, true
	}
	if un := w.unassigned(); len(un) > 0 {
		return []Action{wait(TierBootstrap, "slots left unassigned", FormatRanges(un))}, true
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
	if len(attach) > 0 {
		return attach, true
	}
	if a, ok := notes.get(); ok {
		return []Action{a}, true
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

// meetAll introduces every node of ns that has not started to know the
// cluster to one seed, all in one wave: a MEET to a single seed is enough,
// gossip spreads the rest. The seed itself is introduced by the others.
func (w *world) meetAll(tier Tier, ns []*node) []Action {
	seed := w.seedFor(nil)
	if seed == nil {
		return nil
	}
	var out []Action
	for _, n := range ns {
		if n == seed || w.met(n) || connected(n, seed) {
			continue
		}
		out = append(out, meet(tier, n, seed))
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

// formed checks the formation criteria of §3.1.
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

func meet(tier Tier, n, seed *node) Action {
	return Action{Kind: KindMeet, Tier: tier, Reason: ReasonMeet,
		Detail: fmt.Sprintf("%s meets %s", n.Name, seed.Name),
		Meet:   &Meet{Node: n.Name, Seed: seed.Name, SeedIP: seed.Pod.IP}}
}

func replicate(tier Tier, n, p *node) Action {
	return Action{Kind: KindReplicate, Tier: tier, Reason: "attaching replica",
		Detail:    fmt.Sprintf("%s follows %s", n.Name, p.Name),
		Replicate: &Replicate{Node: n.Name, Primary: p.Name, PrimaryID: p.id}}
}

func markActive(tier Tier, n *node) Action {
	return Action{Kind: KindMarkActive, Tier: tier, Reason: ReasonCompletedJoin,
		Detail: n.Name, MarkActive: &NodeRef{Node: n.Name}}
}

func markLeaving(tier Tier, n *node, reason string) Action {
	return Action{Kind: KindMarkLeaving, Tier: tier, Reason: reason,
		Detail: n.Name, MarkLeaving: &NodeRef{Node: n.Name}}
}

func createNode(tier Tier, idx int, jt JoinType, reason string) Action {
	return Action{Kind: KindCreateNode, Tier: tier, Reason: reason,
		Detail:     fmt.Sprintf("shard %d", idx),
		CreateNode: &CreateNode{ShardIndex: idx, JoinType: jt}}
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

// joinTier says which work a joining node belongs to.
func (w *world) joinTier(n *node) Tier {
	if n.JoinType == JoinShard {
		return TierTopology
	}
	for _, o := range w.shardMembers(n.ShardIndex) {
		if o.Outdated {
			return TierUpdate
		}
	}
	return TierStability
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
// up to replicasPerShard, every shard in one wave (§2.1 1.3). Reattaching
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

// migrations resumes or waits for slot migrations already under way.
func (w *world) migrations() (Action, bool) {
	for _, n := range w.liveNodes() {
		if n.View.AtomicMigrationInFlight {
			return wait(TierTopology, "slot migration in progress", n.Name), true
		}
	}
	for _, n := range w.liveNodes() {
		if !n.isPrimary() {
			// Valkey 8 replicates SETSLOT to replicas so a failover keeps
			// the state; the primary's copy is the one to act on.
			continue
		}
		for _, pair := range []struct {
			slots    map[int]string
			outgoing bool
		}{{n.View.Migrating, true}, {n.View.Importing, false}} {
			if len(pair.slots) == 0 {
				continue
			}
			first, peer := firstRun(pair.slots)
			other := w.byID[peer]
			if other == nil || !other.live() {
				return wait(TierTopology, "interrupted slot migration involves an unreachable node",
					fmt.Sprintf("%s slots %s", n.Name, first)), true
			}
			if !other.isPrimary() {
				p, waiting := w.promotedPeer(n, other, first)
				if waiting != nil {
					return *waiting, true
				}
				other = p
			}
			from, to := n, other
			if !pair.outgoing {
				from, to = other, n
			}
			return w.migrate(from, to, first, MigrationClassic, "resuming interrupted slot migration"), true
		}
	}
	return Action{}, false
}

// promotedPeer is the primary that now stands for the other end of an
// interrupted migration when that end was demoted to a replica (a failover
// in its shard, spurious or not): the slot state still names the demoted
// node, which refuses to import or to be named as a target, and the keys
// already moved live on in its shard's new primary.
func (w *world) promotedPeer(n, peer *node, slots SlotRange) (*node, *Action) {
	p := w.byID[peer.View.PrimaryID]
	if p == nil || p == n || !p.isPrimary() || !w.healthy(p) {
		a := wait(TierTopology, ReasonMigrationPeerDemoted,
			fmt.Sprintf("%s slots %s: %s replicates %s", n.Name, slots, peer.Name, w.label(peer.View.PrimaryID)))
		return nil, &a
	}
	return p, nil
}

// redirectMigrations keeps an interrupted classic migration whose other end
// died from being dropped. Forgetting the dead node clears the slot's
// MIGRATING or IMPORTING state, and keys already moved would then sit on a
// node that does not own their slot, out of every client's reach. Valkey
// itself points the state at the replica that wins the election for the
// dead end, so usually the peer is alive again by the time this runs and
// migrations() resumes it; this step covers the rest: it waits while an
// election can still happen, promotes the replica of a slotless dead end
// (which Valkey never elects), and resumes with the node that took over the
// dead end's shard if the state still names the dead node. With no node to
// take over (a primary without replicas), forgetting goes ahead.
func (w *world) redirectMigrations() (Action, bool) {
	for _, n := range w.liveNodes() {
		if !n.isPrimary() {
			continue
		}
		for _, pair := range []struct {
			slots    map[int]string
			outgoing bool
		}{{n.View.Migrating, true}, {n.View.Importing, false}} {
			for _, peer := range sortedStrings(invert(pair.slots)) {
				gone := w.byID[peer]
				if gone == nil || !gone.dead() {
					continue
				}
				heir, waiting := w.heir(gone)
				if waiting != nil {
					return *waiting, true
				}
				if heir == nil {
					continue
				}
				from, to := n, heir
				if !pair.outgoing {
					from, to = heir, n
				}
				return w.migrate(from, to, runWith(pair.slots, peer), MigrationClassic,
					"resuming slot migration with the node that replaced "+gone.Name), true
			}
		}
	}
	return Action{}, false
}

// heir is the live primary that took over a dead node's shard, or a Wait
// while one of its replicas may still be promoted.
func (w *world) heir(gone *node) (*node, *Action) {
	for _, m := range w.shardMembers(gone.ShardIndex) {
		if m != gone && m.isPrimary() && w.healthy(m) {
			return m, nil
		}
	}
	reps := w.replicasFollowing(gone.id)
	if len(reps) == 0 {
		return nil, nil
	}
	if slices.Contains(w.holders, gone.id) {
		// Valkey's election, or the takeover of primaries(), promotes one.
		a := wait(TierStability, "waiting for a replica to replace the dead end of a slot migration", gone.Name)
		return nil, &a
	}
	// Valkey never promotes the replica of a primary without slots, such
	// as a new shard's primary that died before its first slot arrived.
	a := Action{Kind: KindFailover, Tier: TierStability, Reason: ReasonPromoteMigrationHeir,
		Detail:   fmt.Sprintf("%s replaces %s", reps[0].Name, gone.Name),
		Failover: &Failover{Node: reps[0].Name, Mode: FailoverTakeover}}
	return nil, &a
}

// invert maps the peers of a slot map to themselves, for sorting.
func invert(m map[int]string) map[string]string {
	out := map[string]string{}
	for _, p := range m {
		out[p] = ""
	}
	return out
}

// runWith is the lowest contiguous run of slots whose peer is peer.
func runWith(m map[int]string, peer string) SlotRange {
	only := map[int]string{}
	for s, p := range m {
		if p == peer {
			only[s] = p
		}
	}
	r, _ := firstRun(only)
	return r
}

// firstRun is the lowest contiguous run of slots sharing one peer.
func firstRun(m map[int]string) (SlotRange, string) {
	slots := make([]int, 0, len(m))
	for s := range m {
		slots = append(slots, s)
	}
	slices.Sort(slots)
	r := SlotRange{Start: slots[0], End: slots[0]}
	peer := m[slots[0]]
	for _, s := range slots[1:] {
		if s != r.End+1 || m[s] != peer {
			break
		}
		r.End = s
	}
	return r, peer
}

func (w *world) migrate(from, to *node, r SlotRange, method MigrationMethod, reason string) Action {
	return w.migrateRanges(from, to, []SlotRange{r}, method, reason)
}

func (w *world) migrateRanges(from, to *node, rs []SlotRange, method MigrationMethod, reason string) Action {
	return Action{Kind: KindMigrateSlots, Tier: TierTopology, Reason: reason,
		Detail: fmt.Sprintf("%s -> %s slots %s by %s", from.Name, to.Name, FormatRanges(rs), method.Command()),
		MigrateSlots: &MigrateSlots{From: from.Name, FromID: from.id, To: to.Name, ToID: to.id,
			ToIP: to.Pod.IP, Slots: rs, Method: method}}
}

// departures finishes nodes marked Leaving: hand the primary role away if
// needed, forget everywhere, delete. Replicas go before primaries so a
// primary is never forgotten by its own replica.
func (w *world) departures() (Action, bool) {
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
		if n.selfSlots() > 0 {
			var to *node
			for _, r := range w.replicasFollowing(n.id) {
				if !r.leaving() && !r.Outdated && w.healthy(r) && r.View.LinkUp && r.View.SyncDone {
					to = r
					break
				}
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
				Detail: n.Name, Forget: &Forget{NodeID: n.id, On: w.forgetTargets(n.id)}}, true
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
	counts := map[int]int{}
	primaries := map[int]*node{}
	for _, idx := range w.liveShards() {
		p := w.designated(idx)
		if p == nil {
			continue
		}
		primaries[idx] = p
		counts[idx] = p.selfSlots()
	}
	targets := BalanceTargets(counts, w.in.Shards)
	var list []ShardSlots
	for idx, p := range primaries {
		members := w.shardMembers(idx)
		settled := !slices.ContainsFunc(members, (*node).joining)
		list = append(list, ShardSlots{
			Key:    idx,
			Slots:  p.View.Slots,
			Target: targets[idx],
			CanReceive: w.healthy(p) && w.met(p) && settled &&
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
	for _, t := range PlanTransfers(list) {
		if method == MigrationClassic {
			// Classic moves are driven slot by slot from here, so each
			// pair moves one batch per wave and the plan is redone with
			// what the nodes then report.
			t.Slots = TopSlots(t.Slots, w.batch)
		}
		out = append(out, w.migrateRanges(primaries[t.From], primaries[t.To], t.Slots, method, reason))
	}
	return out, len(out) > 0
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

// roll replaces outdated nodes, one shard at a time in index order (§6.2):
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
	for _, n := range w.nodes {
		if n.ShardIndex != target && !n.dead() && (n.joining() || n.leaving()) {
			return wait(TierUpdate, "waiting for other shards to settle before rolling", n.Name), true
		}
	}
	members := w.shardMembers(target)
	for _, n := range members {
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
		for _, n := range fresh {
			if n.isReplicaOf(p.id) && w.healthy(n) && n.View.LinkUp && n.View.SyncDone {
				return Action{Kind: KindFailover, Tier: TierUpdate, Reason: ReasonRollFailover,
					Detail:   fmt.Sprintf("%s replaces %s", n.Name, p.Name),
					Failover: &Failover{Node: n.Name, Mode: FailoverDefault}}, true
			}
		}
		return wait(TierUpdate, "waiting for an up-to-date replica to catch up", fresh[0].Name), true
	}
	if len(reps) <= R {
		return createNode(TierUpdate, target, JoinReplica, "creating replacement node"), true
	}
	return wait(TierUpdate, "waiting for shard to settle", fmt.Sprint(target)), true
}

// cleanup retires surplus replicas, from the shard with the most first.
func (w *world) cleanup() (Action, bool) {
	var victim *node
	most := w.in.ReplicasPerShard
	for _, idx := range w.liveShards() {
		p := w.designated(idx)
		if p == nil || p.selfSlots() == 0 {
			continue
		}
		var reps []*node
		for _, n := range w.shardMembers(idx) {
			if n != p {
				reps = append(reps, n)
			}
		}
		if len(reps) <= most {
			continue
		}
		most = len(reps)
		slices.SortStableFunc(reps, func(a, b *node) int {
			return cmp.Or(
				boolFirst(!a.live(), !b.live()),
				boolFirst(a.joining(), b.joining()),
				boolFirst(!(a.View != nil && a.View.SyncDone), !(b.View != nil && b.View.SyncDone)),
				cmp.Compare(b.Name, a.Name))
		})
		victim = reps[0]
	}
	if victim == nil {
		return Action{}, false
	}
	return markLeaving(TierCleanup, victim, "removing surplus replica"), true
}

// settled returns Done when the cluster has exactly its desired shape and
// every node agrees, else Wait with the first thing missing.
func (w *world) settled() (Action, bool) {
	S, R := w.in.Shards, w.in.ReplicasPerShard
	for _, n := range w.nodes {
		switch {
		case n.dead():
			return wait(w.departureTier(n), "waiting for dead node to be removed", n.Name), true
		case n.Pod.Phase == PodStopping:
			return waitForPod(TierStability, n), true
		case !n.live():
			return waitForPod(w.lifecycleTier(n), n), true
		case n.joining() || n.leaving():
			return wait(w.lifecycleTier(n), "waiting for node to finish "+string(n.Lifecycle), n.Name), true
		}
	}
	shards := w.liveShards()
	if len(shards) != S {
		return wait(TierSteady, "waiting for shard count", fmt.Sprintf("%d of %d", len(shards), S)), true
	}
	for _, idx := range shards {
		p := w.designated(idx)
		if p == nil || p.selfSlots() == 0 {
			return wait(TierSteady, "shard has no slot-holding primary", fmt.Sprint(idx)), true
		}
		reps := w.replicasFollowing(p.id)
		if r := len(reps); r != R || len(w.shardMembers(idx)) != 1+R {
			return wait(TierSteady, "waiting for replicas", fmt.Sprintf("shard %d has %d, want %d", idx, r, R)), true
		}
		// A replica that is still loading its primary's data counts for
		// the shape but not for safety: until it holds the data, losing
		// the primary loses the shard, so the cluster is not converged.
		for _, r := range reps {
			if !r.View.LinkUp || !r.View.SyncDone {
				return wait(TierStability, ReasonReplicaSyncing, r.Name), true
			}
		}
	}
	if ok, why := w.formed(); !ok {
		// Nodes that do not yet agree on the slot map (gossip after a move,
		// a failover, a join) answer some clients CLUSTERDOWN or a stale
		// MOVED: the change is not over, so the state says Updating rather
		// than Active.
		return wait(TierTopology, "waiting for the cluster to agree", why), true
	}
	return done("cluster converged"), true
}
