package topology

import (
	"fmt"
	"maps"
	"slices"
)

// cancelReversedMoves stops the atomic migrations that feed a shard the
// desired shape no longer keeps, one CLUSTER CANCELSLOTMIGRATIONS per
// source, all sources at once. Only a shard whose balance target is 0 is
// such a target: receiving never lowers a shard's count, so a kept shard
// cannot become one mid-move, and a shard that gets nothing would hand
// back every slot it gained. The source keeps owning the slots until its
// job commits, so a cancelled job leaves none half-owned; Valkey drops
// the target's partial copy.
func (w *world) cancelReversedMoves() ([]Action, bool) {
	_, _, targets := w.balance()
	var out []Action
	for _, n := range w.liveNodes() {
		for _, e := range n.View.Exports {
			to := w.byID[e.TargetID]
			if to == nil {
				continue
			}
			if want, kept := targets[to.ShardIndex]; !kept || want != 0 {
				continue
			}
			out = append(out, Action{Kind: KindCancelMigrations, Tier: TierTopology, Reason: ReasonCancelReversedMove,
				Detail:           fmt.Sprintf("%s -> %s slots %s", n.Name, to.Name, FormatRanges(e.Slots)),
				CancelMigrations: &NodeRef{Node: n.Name}})
			break
		}
	}
	return out, len(out) > 0
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
		for _, pair := range classicStates(n) {
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

// classicState is one side of a node's classic (SETSLOT) migration state:
// each slot with the peer at its other end.
type classicState struct {
	slots    map[int]string
	outgoing bool
}

// classicStates are the slots n migrates out, then the slots it imports.
func classicStates(n *node) []classicState {
	return []classicState{{n.View.Migrating, true}, {n.View.Importing, false}}
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
		for _, pair := range classicStates(n) {
			for _, peer := range slices.Sorted(maps.Keys(invert(pair.slots))) {
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
