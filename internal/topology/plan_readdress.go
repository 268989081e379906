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

// Scattered: some live member knows another live one only at an address
// it no longer runs at. Such members cannot reach each other, whatever
// each says of the cluster in the seconds before it notices, so the
// cluster is not together until readdress has moved them.
func Scattered(in Input) bool {
	w := newWorld(in)
	live := w.liveNodes()
	for _, n := range live {
		for _, o := range live {
			if o != n && w.knowsAtOldAddress(n, o) {
				return true
			}
		}
	}
	return false
}
