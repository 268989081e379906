package topology

// ReasonReplicaSlotState: a replica still reports a slot migration its
// primary has finished.
const ReasonReplicaSlotState = "clearing slot migration state a replica kept"

// replicaSlotStates finds a replica that still reports a slot MIGRATING or
// IMPORTING after its primary's copy of the state was cleared, and re-runs
// the classic move of those slots between their current ends, which tells
// the replica's primary the owner again (see classicMigration: Valkey 8
// replicates that command, and copies the state in a full sync, but a
// primary that learns the owner from gossip clears only its own). Left
// alone, the replica would carry a finished move into its first failover,
// where its new role would claim to be migrating slots it does not own.
func (w *world) replicaSlotStates() (Action, bool) {
	for _, n := range w.liveNodes() {
		if n.View.Role != RoleReplica {
			continue
		}
		p := w.byID[n.View.PrimaryID]
		if p == nil || !w.healthy(p) || !p.isPrimary() {
			continue
		}
		for _, states := range []map[int]string{n.View.Migrating, n.View.Importing} {
			stale := map[int]string{}
			for slot, peer := range states {
				_, migrating := p.View.Migrating[slot]
				_, importing := p.View.Importing[slot]
				if migrating || importing || slot < 0 || slot >= TotalSlots {
					continue
				}
				stale[slot] = peer
			}
			if len(stale) == 0 {
				continue
			}
			run, peerID := firstRun(stale)
			for s := run.Start + 1; s <= run.End; s++ {
				if w.owner[s] != w.owner[run.Start] {
					run.End = s - 1
					break
				}
			}
			// The move is over one way or the other: whichever end owns
			// the slots now keeps them, and the other gives up anything
			// it still holds, so the slots go nowhere new.
			peer := w.byID[peerID]
			if peer == nil || !w.healthy(peer) || !peer.isPrimary() {
				continue
			}
			from, to := peer, p
			if w.owner[run.Start] == peer.id {
				from, to = p, peer
			} else if w.owner[run.Start] != p.id {
				continue
			}
			return w.migrate(from, to, run, MigrationClassic, ReasonReplicaSlotState+": "+n.Name), true
		}
	}
	return Action{}, false
}
