package topology

import (
	"cmp"
	"net/netip"
	"slices"
)

// node is a Member plus what the planner derives about it.
type node struct {
	*Member
	id string
	// peers are the non-handshake entries of its view, by ID.
	peers map[string]*Peer
	// handshakeIPs are addresses it is still handshaking with.
	handshakeIPs map[string]bool
	// volumeLost says why a persistent node's data is gone for good
	// (VolumeLost), "" while it is not.
	volumeLost string
}

// live: its pod runs and it answered this tick.
func (n *node) live() bool { return n.Pod.Phase == PodRunning && n.View != nil }

// dead: its process is gone for good (pods are never restarted, and a
// node gets one pod only).
func (n *node) dead() bool {
	return n.Pod.Phase == PodGone || (n.Pod.Phase == PodAbsent && !n.awaitingPod())
}

// pending: not running yet.
func (n *node) pending() bool {
	return n.Pod.Phase == PodPending || (n.Pod.Phase == PodAbsent && n.awaitingPod())
}

// awaitingPod: a joining node whose one pod has not been created yet.
func (n *node) awaitingPod() bool {
	return n.Lifecycle == LifecycleJoining && !n.PodCreated
}

// unknown: its pod runs but it did not answer.
func (n *node) unknown() bool { return n.Pod.Phase == PodRunning && n.View == nil }

func (n *node) leaving() bool { return n.Lifecycle == LifecycleLeaving }
func (n *node) joining() bool { return n.Lifecycle == LifecycleJoining }

func (n *node) knows(id string) bool {
	if id == "" || n.peers == nil {
		return false
	}
	_, ok := n.peers[id]
	return ok
}

func (n *node) isReplicaOf(id string) bool {
	return n.View != nil && n.View.Role == RoleReplica && n.View.PrimaryID == id && id != ""
}

func (n *node) isPrimary() bool { return n.View != nil && n.View.Role == RolePrimary }

func (n *node) selfSlots() int {
	if n.View == nil || n.View.Role != RolePrimary {
		return 0
	}
	return CountSlots(n.View.Slots)
}

// world is the derived picture Plan reasons about.
type world struct {
	in     Input
	nodes  []*node // sorted by shard index, then name
	byName map[string]*node
	byID   map[string]*node
	// owner is each slot's owner as an index into ownerIDs plus one, 0
	// when unassigned: a table without pointers, so the 16,384 entries
	// every reconcile builds cost the garbage collector nothing to scan.
	owner    []int32
	ownerIDs []string
	ownedBy  map[string][]SlotRange
	holders  []string // IDs owning slots, sorted
	failFlag map[string]bool
	// pfailAll holds the IDs every live node that knows them flags fail or
	// pfail: a slot holder that is no member of this cluster is treated as
	// down only when no live peer still reaches it.
	pfailAll map[string]bool
	batch    int
}

func newWorld(in Input) *world {
	w := &world{
		in:       in,
		byName:   map[string]*node{},
		byID:     map[string]*node{},
		owner:    make([]int32, TotalSlots),
		ownedBy:  map[string][]SlotRange{},
		failFlag: map[string]bool{},
		pfailAll: map[string]bool{},
		batch:    in.BatchSize,
	}
	if w.batch <= 0 {
		w.batch = DefaultBatchSize
	}
	for i := range in.Members {
		n := newNode(in.Members[i])
		w.nodes = append(w.nodes, n)
		w.byName[n.Name] = n
	}
	slices.SortFunc(w.nodes, func(a, b *node) int {
		return cmp.Or(cmp.Compare(a.ShardIndex, b.ShardIndex), cmp.Compare(a.Name, b.Name))
	})
	w.indexIDs()
	live := w.liveNodes()
	for _, n := range live {
		for id, p := range n.peers {
			if p.Fail {
				w.failFlag[id] = true
			}
		}
	}
	w.assignOwners(live)
	w.groupOwned()
	w.markSuspectedByAll(live)
	return w
}

func sortedPeerIDs(n *node) []string {
	ids := make([]string, 0, len(n.peers))
	for id := range n.peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (w *world) liveNodes() []*node {
	var out []*node
	for _, n := range w.nodes {
		if n.live() {
			out = append(out, n)
		}
	}
	return out
}

// healthy: live and not declared failed by the cluster.
func (w *world) healthy(n *node) bool { return n != nil && n.live() && !w.failFlag[n.id] }

// members of a shard index that count as belonging to it: not leaving, not
// dead.
func (w *world) shardMembers(idx int) []*node {
	var out []*node
	for _, n := range w.nodes {
		if n.ShardIndex == idx && !n.leaving() && !n.dead() {
			out = append(out, n)
		}
	}
	return out
}

// liveShards are the shard indices with at least one member that is neither
// leaving nor dead, ascending.
func (w *world) liveShards() []int {
	var out []int
	for _, n := range w.nodes {
		if !n.leaving() && !n.dead() && !slices.Contains(out, n.ShardIndex) {
			out = append(out, n.ShardIndex)
		}
	}
	slices.Sort(out)
	return out
}

// freeIndex is the lowest shard index no member uses.
func (w *world) freeIndex() int { return w.freeIndices(1)[0] }

// freeIndices are the k lowest shard indices no member uses.
func (w *world) freeIndices(k int) []int {
	used := map[int]bool{}
	for _, n := range w.nodes {
		used[n.ShardIndex] = true
	}
	var out []int
	for i := 0; len(out) < k; i++ {
		if !used[i] {
			out = append(out, i)
		}
	}
	return out
}

// core are the nodes whose views must agree: live and not leaving.
func (w *world) core() []*node {
	var out []*node
	for _, n := range w.nodes {
		if n.live() && !n.leaving() {
			out = append(out, n)
		}
	}
	return out
}

// met: n and every other core node know each other, each at the address
// the other runs at now and by name too where a node announces one.
func (w *world) met(n *node) bool {
	if !n.live() {
		return false
	}
	for _, o := range w.core() {
		if o == n {
			continue
		}
		if !o.knowsName(n) || !n.knowsName(o) || w.knowsAtOldAddress(o, n) || w.knowsAtOldAddress(n, o) {
			return false
		}
	}
	return true
}

// knowsName: n knows o, and by the hostname o announces, if any. A node
// learns a peer's hostname only from a ping the peer sends it directly,
// which can come seconds after the handshake (up to half the node
// timeout), and until then it tells clients the peer's endpoint is "?":
// in CLUSTER SHARDS and CLUSTER SLOTS, and in the MOVED that sends a
// client there. On a TLS cluster, which announces hostnames so that
// clients can verify every node, a client that refreshed its slot map
// from such a node has no address for the peer's slots.
func (n *node) knowsName(o *node) bool {
	if !n.knows(o.id) {
		return false
	}
	if o.View == nil || o.View.Hostname == "" {
		return true
	}
	return n.peers[o.id].Hostname == o.View.Hostname
}

// knowsAtOldAddress: n knows live member o's node ID, but at another
// address than the pod o answered from with that ID. Only a node that
// kept its ID across a new pod (its nodes.conf on a volume) shows this;
// until the address is corrected n cannot reach o, so o does not count as
// met however long n has known its ID. Every node announces its pod IP
// (cluster-announce-ip), so a current address is exactly the pod IP.
func (w *world) knowsAtOldAddress(n, o *node) bool {
	if !o.live() || o.View.ID == "" || o.Pod.IP == "" || w.byID[o.View.ID] != o {
		return false
	}
	p := n.peers[o.View.ID]
	return p != nil && !sameIP(p.IP, o.Pod.IP)
}

// sameIP compares two addresses as IPs, so the notations of one address
// (an IPv6 one written two ways) are not taken for two addresses.
func sameIP(a, b string) bool {
	if a == b {
		return true
	}
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	return errX == nil && errY == nil && x.Unmap() == y.Unmap()
}

// connected: n and seed have at least started to know each other.
func connected(n, seed *node) bool {
	return seed.knows(n.id) || n.knows(seed.id) ||
		seed.handshakeIPs[n.Pod.IP] || n.handshakeIPs[seed.Pod.IP]
}

// seedFor picks the core node that knows the most peers, preferring Active
// ones, to introduce n to the cluster; n == nil picks the cluster's seed.
func (w *world) seedFor(n *node) *node {
	var best *node
	for _, o := range w.core() {
		if o == n {
			continue
		}
		if best == nil || len(o.peers) > len(best.peers) ||
			(len(o.peers) == len(best.peers) && !o.joining() && best.joining()) {
			best = o
		}
	}
	return best
}

// slotsAgree: every core node reports the same cluster_slots_assigned. A
// node still joining counts only once it has met everyone; until then its
// view of the slots is naturally empty.
func (w *world) slotsAgree() bool {
	first := -1
	for _, n := range w.core() {
		if n.joining() && !w.met(n) {
			continue
		}
		if first < 0 {
			first = n.View.SlotsAssigned
		}
		if n.View.SlotsAssigned != first {
			return false
		}
	}
	return true
}

// slotOwner is the ID of the slot's owner, "" when unassigned.
func (w *world) slotOwner(s int) string {
	if i := w.owner[s]; i != 0 {
		return w.ownerIDs[i-1]
	}
	return ""
}

func (w *world) unassigned() []SlotRange {
	return rangesOf(func(s int) bool { return w.owner[s] == 0 })
}

func (w *world) slotsOf(idx int) int {
	n := 0
	for _, id := range w.holders {
		if h := w.byID[id]; h != nil && h.ShardIndex == idx {
			n += CountSlots(w.ownedBy[id])
		}
	}
	return n
}

// designated is the node that is, or is to become, the primary of shard idx:
// the live slot holder; else a live primary that already has replicas; else
// the first met live primary, Active before Joining.
func (w *world) designated(idx int) *node {
	// A primary its peers flag FAIL may be a former one still claiming
	// slots it lost: it is nobody's designated primary, and so no
	// migration's source or target, until the flag clears.
	var cands []*node
	for _, n := range w.shardMembers(idx) {
		if w.healthy(n) && n.isPrimary() {
			cands = append(cands, n)
		}
	}
	var best *node
	for _, n := range cands {
		if s := n.selfSlots(); s > 0 && (best == nil || s > best.selfSlots()) {
			best = n
		}
	}
	if best != nil {
		return best
	}
	bestReps := 0
	for _, n := range cands {
		if r := len(w.replicasFollowing(n.id)); r > bestReps {
			best, bestReps = n, r
		}
	}
	if best != nil {
		return best
	}
	// Choosing among empty primaries on a partial view could pick another
	// node than last tick, and a wave acts on every joining node at once:
	// two nodes of the shard would be made its primary. Wait for the
	// silent one instead.
	if w.silentIn(idx, false) != nil {
		return nil
	}
	for _, n := range cands {
		if !w.met(n) {
			continue
		}
		if best == nil || (best.joining() && !n.joining()) {
			best = n
		}
	}
	return best
}

// replicasFollowing are the live nodes that replicate id.
func (w *world) replicasFollowing(id string) []*node {
	var out []*node
	for _, n := range w.nodes {
		if n.live() && n.isReplicaOf(id) {
			out = append(out, n)
		}
	}
	return out
}

// forgetTargets are the live nodes that can be told to forget id.
func (w *world) forgetTargets(id string) []string {
	var out []string
	for _, n := range w.liveNodes() {
		if n.id == id || n.isReplicaOf(id) {
			continue
		}
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// knownByTargets: some node that can forget id still knows it.
func (w *world) knownByTargets(id string) bool {
	for _, name := range w.forgetTargets(id) {
		if w.byName[name].knows(id) {
			return true
		}
	}
	return false
}

// quorum: a majority of slot-holding primaries is healthy.
func (w *world) quorum() bool {
	ok := 0
	for _, id := range w.holders {
		if w.healthy(w.byID[id]) {
			ok++
		}
	}
	return 2*ok > len(w.holders)
}

// allAgree: every core node knows every other one, reports every slot
// assigned and cluster_state ok.
func (w *world) allAgree() bool {
	for _, n := range w.core() {
		if !w.met(n) || n.View.SlotsAssigned != TotalSlots || !n.View.ClusterOK {
			return false
		}
	}
	return true
}

func (w *world) label(id string) string {
	if n := w.byID[id]; n != nil {
		return n.Name
	}
	return id
}

func (w *world) indexOf(id string) int {
	if n := w.byID[id]; n != nil {
		return n.ShardIndex
	}
	return -1
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
