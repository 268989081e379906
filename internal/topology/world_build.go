package topology

import "slices"

// newNode is a member as the planner sees it: its own ID where it gave
// one, its peers by ID (those still in handshake by address only).
func newNode(m Member) *node {
	n := &node{Member: &m, id: m.NodeID}
	if why, lost := VolumeLost(m); lost {
		// Its pod is reported pending, as a persistent node's is
		// while it comes back; without its volume it never will.
		m.Pod.Phase, n.volumeLost = PodGone, why
	}
	if m.View == nil {
		return n
	}
	if m.View.ID != "" {
		n.id = m.View.ID
	}
	n.peers = map[string]*Peer{}
	n.handshakeIPs = map[string]bool{}
	for j := range m.View.Peers {
		p := &m.View.Peers[j]
		if p.Handshake || p.ID == "" {
			n.handshakeIPs[p.IP] = true
			continue
		}
		n.peers[p.ID] = p
	}
	return n
}

// indexIDs maps node IDs to members: a live node's own ID wins over a
// stale record on another member.
func (w *world) indexIDs() {
	for _, n := range w.nodes {
		if n.id != "" && !n.live() {
			if _, taken := w.byID[n.id]; !taken {
				w.byID[n.id] = n
			}
		}
	}
	for _, n := range w.nodes {
		if n.id != "" && n.live() {
			w.byID[n.id] = n
		}
	}
}

// assignOwners gives each slot its owner: every live node is
// authoritative about itself, an unflagged one before one its peers flag
// FAIL (a former primary that was cut off while its replica took over
// still claims the slots until it learns otherwise); for nodes that cannot
// speak, take what the live nodes say about them.
func (w *world) assignOwners(live []*node) {
	index := map[string]int32{}
	claim := func(id string, rs []SlotRange) {
		if len(rs) == 0 {
			return
		}
		i, ok := index[id]
		if !ok {
			w.ownerIDs = append(w.ownerIDs, id)
			i = int32(len(w.ownerIDs))
			index[id] = i
		}
		for _, r := range rs {
			for s := max(r.Start, 0); s <= min(r.End, TotalSlots-1); s++ {
				if w.owner[s] == 0 {
					w.owner[s] = i
				}
			}
		}
	}
	for _, flagged := range []bool{false, true} {
		for _, n := range live {
			if n.View.Role == RolePrimary && w.failFlag[n.id] == flagged {
				claim(n.id, n.View.Slots)
			}
		}
	}
	for _, n := range live {
		for _, id := range sortedPeerIDs(n) {
			p := n.peers[id]
			if other := w.byID[id]; (other != nil && other.live()) || p.Role == RoleReplica {
				continue
			}
			claim(id, p.Slots)
		}
	}
}

// groupOwned turns the per-slot owners into each holder's ranges. It
// walks runs of one owner, not slots: every reconcile of every cluster
// plans, and a map lookup per slot was most of what planning cost.
func (w *world) groupOwned() {
	for s := 0; s < len(w.owner); {
		i, end := w.owner[s], s
		for end+1 < len(w.owner) && w.owner[end+1] == i {
			end++
		}
		if id := w.slotOwner(s); id != "" {
			if _, seen := w.ownedBy[id]; !seen {
				w.holders = append(w.holders, id)
			}
			w.ownedBy[id] = append(w.ownedBy[id], SlotRange{Start: s, End: end})
		}
		s = end + 1
	}
	slices.Sort(w.holders)
}

// markSuspectedByAll notes the nodes that every live node knowing them
// suspects (PFAIL or FAIL).
func (w *world) markSuspectedByAll(live []*node) {
	knowers := map[string]int{}
	suspects := map[string]int{}
	for _, n := range live {
		for id, p := range n.peers {
			knowers[id]++
			if p.Fail || p.PFail {
				suspects[id]++
			}
		}
	}
	for id, k := range knowers {
		if k > 0 && suspects[id] == k {
			w.pfailAll[id] = true
		}
	}
}
