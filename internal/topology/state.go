package topology

import "slices"

// State is the cluster state Plan's answer implies. The values match the
// ValkeyCluster status.state enum.
type State string

const (
	StateCreating State = "Creating"
	StateActive   State = "Active"
	StateUpdating State = "Updating"
)

// DecideState maps a plan result to the cluster state: Creating until the
// first Done, then Updating while a scale, reshard, roll or cleanup is under
// way and Active otherwise. Healing a failure does not leave Active.
func DecideState(creating bool, a Action) State {
	if creating {
		if a.Kind == KindDone {
			return StateActive
		}
		return StateCreating
	}
	switch a.Tier {
	case TierTopology, TierUpdate, TierCleanup:
		return StateUpdating
	}
	return StateActive
}

// Summary is the observed shape, for status.
type Summary struct {
	// Shards counts slot-holding primaries.
	Shards int
	// Nodes counts members.
	Nodes int
	// ReadyNodes counts members whose pod runs and which every other member
	// knows.
	ReadyNodes int
	// SlotsAssigned counts slots some primary owns.
	SlotsAssigned int
	Shard         []ShardSummary
}

// ShardSummary describes one shard index.
type ShardSummary struct {
	Index     int
	Primary   string
	Replicas  []string
	Slots     []SlotRange
	SlotCount int
}

// Summarize reports the observed shape of the cluster.
func Summarize(in Input) Summary {
	w := newWorld(in)
	s := Summary{Nodes: len(in.Members), Shards: len(w.holders)}
	for _, n := range w.nodes {
		if n.live() && w.met(n) {
			s.ReadyNodes++
		}
	}
	for _, id := range w.holders {
		s.SlotsAssigned += CountSlots(w.ownedBy[id])
	}
	for _, idx := range w.liveShards() {
		sh := ShardSummary{Index: idx}
		p := w.designated(idx)
		if p != nil {
			sh.Primary = p.Name
			sh.Slots = slices.Clone(w.ownedBy[p.id])
			sh.SlotCount = CountSlots(sh.Slots)
		}
		for _, n := range w.shardMembers(idx) {
			if n != p {
				sh.Replicas = append(sh.Replicas, n.Name)
			}
		}
		s.Shard = append(s.Shard, sh)
	}
	return s
}
