package topology

import (
	"maps"
	"slices"
)

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
	// SlotsToMove counts slots that must still leave their shard for the
	// desired shard count's even distribution (slots in flight included).
	SlotsToMove int
	// Moving are the slot migrations under way, classic or atomic.
	Moving []MoveSummary
}

// MoveSummary is one slot migration under way, as its source reports it.
type MoveSummary struct {
	From, To string
	Slots    []SlotRange
	Method   MigrationMethod
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
	s.SlotsToMove, s.Moving = w.slotsToMove(), w.moving()
	return s
}

// slotsToMove is the surplus of every shard over its share of the desired
// shard count, the distance moves() still has to go.
func (w *world) slotsToMove() int {
	counts := map[int]int{}
	for _, idx := range w.liveShards() {
		if p := w.designated(idx); p != nil {
			counts[idx] = p.selfSlots()
		}
	}
	n := 0
	for idx, target := range BalanceTargets(counts, w.in.Shards) {
		n += max(0, counts[idx]-target)
	}
	return n
}

// moving lists the migrations slot-holding primaries report as their
// source: classic MIGRATING states grouped by target, and unfinished
// CLUSTER MIGRATESLOTS jobs.
func (w *world) moving() []MoveSummary {
	var out []MoveSummary
	for _, n := range w.liveNodes() {
		if !n.isPrimary() {
			continue
		}
		byTarget := map[string][]SlotRange{}
		for slot, to := range n.View.Migrating {
			byTarget[to] = append(byTarget[to], SlotRange{Start: slot, End: slot})
		}
		for _, to := range slices.Sorted(maps.Keys(byTarget)) {
			out = append(out, MoveSummary{From: n.Name, To: w.label(to), Slots: NormalizeRanges(byTarget[to]), Method: MigrationClassic})
		}
		for _, e := range n.View.Exports {
			out = append(out, MoveSummary{From: n.Name, To: w.label(e.TargetID), Slots: NormalizeRanges(e.Slots), Method: MigrationAtomic})
		}
	}
	return out
}
