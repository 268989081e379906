package topology

import (
	"fmt"
	"slices"
	"strings"
)

// ReasonReintroduce: a member that stays was forgotten by some peers
// (forgotten as a departing replica, then promoted over a lost primary as
// the only copy of its keys, say) while others still know it.
const ReasonReintroduce = "meeting a member some peers forgot"

// reintroduce meets, in one wave, every core node with each staying
// member it does not know, where that member still knows some core node.
// Valkey adds a node only on a CLUSTER MEET or on the word of a peer it
// trusts, and a node that forgot a peer ignores that peer's own pings and
// refuses word of it for a minute; a member forgotten by the only peers
// that would gossip it stays unknown to them for good. Meeting is
// harmless to a node that learnt the member meanwhile, and a member that
// knows no core node at all is cutOff's: one MEET joins both sides.
// A member whose slots the stranger sees served by another node is not
// introduced: Valkey would settle that clash by epoch and the loser would
// drop its keys.
func (w *world) reintroduce() ([]Action, bool) {
	seeds := map[*node][]*node{}
	core := w.core()
	for _, n := range core {
		if n.joining() || n.id == "" || !slices.ContainsFunc(core, func(o *node) bool { return o != n && n.knows(o.id) }) {
			continue
		}
		for _, o := range core {
			if o == n || o.joining() || o.knows(n.id) || o.handshakeIPs[n.Pod.IP] || w.claimsClash(n, o) {
				continue
			}
			seeds[o] = append(seeds[o], n)
		}
	}
	var out []Action
	for _, o := range core {
		if len(seeds[o]) == 0 {
			continue
		}
		a := meet(TierStability, o, seeds[o]...)
		names := make([]string, len(seeds[o]))
		for i, n := range seeds[o] {
			names[i] = n.Name
		}
		a.Reason, a.Detail = ReasonReintroduce, fmt.Sprintf("%s meets %s", o.Name, strings.Join(names, ", "))
		out = append(out, a)
	}
	return out, len(out) > 0
}
