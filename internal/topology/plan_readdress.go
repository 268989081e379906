package topology

import (
	"fmt"
	"strings"
)

// readdress meets, in one wave, every live member with each live member it
// knows only at an address that member no longer runs at. A persistent
// node keeps its node ID and its nodes.conf across pods, so after a full
// restart every node knows every peer, by ID, at an address that is gone:
// none reaches another, the peers are flagged failing and the cluster
// stays down. A CLUSTER MEET of the new address makes Valkey's handshake
// meet a node ID it already knows, and it moves that node to the new
// address (nodeUpdateAddressIfNeeded) instead of adding a node. It comes
// before the steps that wait on failing peers: no flag clears until the
// peers reach each other. The address met is only ever the one the member
// answered from with that ID itself.
func (w *world) readdress() ([]Action, bool) {
	var out []Action
	live := w.liveNodes()
	for _, n := range live {
		var seeds []*node
		for _, o := range live {
			// A handshake under way with the new address is the meet
			// already issued; its answer moves the peer.
			if o != n && w.knowsAtOldAddress(n, o) && !n.handshakeIPs[o.Pod.IP] {
				seeds = append(seeds, o)
			}
		}
		if len(seeds) == 0 {
			continue
		}
		a := meet(TierStability, n, seeds...)
		moves := make([]string, len(seeds))
		for i, o := range seeds {
			moves[i] = fmt.Sprintf("%s %s -> %s", o.Name, n.peers[o.id].IP, o.Pod.IP)
		}
		a.Reason, a.Detail = ReasonReaddress, fmt.Sprintf("%s meets %s", n.Name, strings.Join(moves, ", "))
		out = append(out, a)
	}
	return out, len(out) > 0
}

// Returning: members of a formed cluster are on their way back to each
// other rather than being healed. Either a member that had run has a
// pending pod again (a persistent node coming back on its volume; a node
// without persistence never gets a second pod) or a stopping pod it will
// get again (a full restart: every pod stops, none answers, none is
// lost yet, and the nodes that still run say the cluster is down), or a
// live member knows
// another live one only at an address it no longer runs at, or no member
// is lost, yet a settled member says the cluster is down (members just
// moved to their new addresses clear their failure flags and rejoin only
// after Valkey's own delays; a member whose pod runs but that does not
// answer yet, still loading its file, is not lost). The nodes' own
// cluster_state is not to be trusted meanwhile: a node back from its
// volume says ok for its first seconds, before it notices that it reaches
// none of its peers.
func Returning(in Input) bool {
	w := newWorld(in)
	lost := false
	for _, n := range w.nodes {
		if !n.joining() && (n.pending() || (n.ComesBack && n.Pod.Phase == PodStopping)) {
			return true
		}
		lost = lost || n.dead()
	}
	live := w.liveNodes()
	for _, n := range live {
		for _, o := range live {
			if o != n && w.knowsAtOldAddress(n, o) {
				return true
			}
		}
	}
	if lost {
		return false
	}
	for _, n := range live {
		if !n.joining() && !n.leaving() && (!n.View.ClusterOK || n.View.SlotsAssigned != TotalSlots) {
			return true
		}
	}
	return false
}
