package topology

import "fmt"

// ReasonReplicaSlotState: a replica still reports a slot migration its
// primary has finished or never started.
const ReasonReplicaSlotState = "clearing slot migration state a replica kept"

// replicaSlotStates finds a replica that still reports a slot MIGRATING or
// IMPORTING while its primary holds no such state for the slot, and clears
// it with CLUSTER SETSLOT STABLE on the primary, which Valkey 8 replicates
// before running it. How the replica came to keep it: a primary that
// learns a slot's owner from gossip clears only its own copy; and one
// whose SETSLOT was replicated but whose client went away while it waited
// for the replicas' acknowledgement (the operator killed mid-pipeline)
// never runs the command itself. Telling the primary the owner again does
// not clear every such copy: a replica keeps IMPORTING unless the new
// owner is its own primary, and MIGRATING while it holds keys of the slot.
// STABLE clears both, and on a primary with no state for the slot it
// changes nothing. Left alone, the replica would carry the stale move
// into its first failover, where its new role would claim to be migrating
// slots it does not own.
func (w *world) replicaSlotStates() (Action, bool) {
	for _, n := range w.liveNodes() {
		if n.View.Role != RoleReplica {
			continue
		}
		p := w.byID[n.View.PrimaryID]
		if p == nil || !w.healthy(p) || !p.isPrimary() {
			continue
		}
		stale := map[int]bool{}
		for _, states := range []map[int]string{n.View.Migrating, n.View.Importing} {
			for slot := range states {
				_, migrating := p.View.Migrating[slot]
				_, importing := p.View.Importing[slot]
				if migrating || importing || slot < 0 || slot >= TotalSlots {
					continue
				}
				stale[slot] = true
			}
		}
		if len(stale) == 0 {
			continue
		}
		rs := rangesOf(func(slot int) bool { return stale[slot] })
		return Action{Kind: KindClearSlotStates, Tier: TierTopology, Reason: ReasonReplicaSlotState,
			Detail:          fmt.Sprintf("%s: slots %s, by SETSLOT STABLE on its primary %s", n.Name, FormatRanges(rs), p.Name),
			ClearSlotStates: &ClearSlotStates{Node: p.Name, Slots: rs}}, true
	}
	return Action{}, false
}
