package backup

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gomomento/valkey-operator/internal/slotrange"
)

// Member is one node of a shard as observed before a backup.
type Member struct {
	// Name is the node's (and its pod's) name; IP where it answers.
	Name string
	IP   string
	// Primary is true for the node serving the shard's slots.
	Primary bool
	// InSync is true for a replica whose link to its primary is up with
	// its initial sync done: its data is the primary's, a moment behind.
	InSync bool
}

// Shard is a primary's slots and every node holding them.
type Shard struct {
	Slots   []slotrange.Range
	Members []Member
	// PrimaryOffset is the primary's replication offset read after the
	// backup was asked for: every write it acknowledged before then lies
	// at or below it, so a replica that has applied this much holds them.
	PrimaryOffset int64
}

// CaughtUp reports whether a replica that has applied replicaOffset holds
// every write its primary had acknowledged at primaryOffset. A replica
// copied before this holds would leave out writes acknowledged before the
// backup began.
func CaughtUp(primaryOffset, replicaOffset int64) bool {
	return replicaOffset >= primaryOffset
}

// Primary is the shard's primary, the source of last resort when its
// replica does not catch up.
func Primary(s Shard) (Member, bool) {
	for _, m := range s.Members {
		if m.Primary {
			return m, true
		}
	}
	return Member{}, false
}

// Source picks the node a shard is copied from: a replica in sync, so
// that the primary, which serves the writes, does not fork for the
// snapshot; the primary when no replica is in sync. Replicas are taken in
// name order, so the choice is the same on every pass.
func Source(s Shard) (Member, error) {
	members := slices.Clone(s.Members)
	slices.SortFunc(members, func(a, b Member) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	var primary *Member
	for i := range members {
		m := &members[i]
		if !m.Primary && m.InSync {
			return *m, nil
		}
		if m.Primary && primary == nil {
			primary = m
		}
	}
	if primary == nil {
		return Member{}, fmt.Errorf("shard %s has no primary and no replica in sync", describeSlots(s.Slots))
	}
	return *primary, nil
}

// Shards orders the shards by their lowest slot, the index each gets in
// the backup, and checks that together they serve every slot exactly
// once: a backup of a cluster with a slot unassigned or a migration under
// way would not restore to the same data.
func Shards(shards []Shard) ([]Shard, error) {
	if len(shards) == 0 {
		return nil, errors.New("the cluster has no shard serving slots")
	}
	out := slices.Clone(shards)
	for i := range out {
		out[i].Slots = slotrange.Merge(out[i].Slots)
		if len(out[i].Slots) == 0 {
			return nil, errors.New("a primary serves no slot")
		}
	}
	slices.SortFunc(out, func(a, b Shard) int { return a.Slots[0].Start - b.Slots[0].Start })
	var all []slotrange.Range
	total := 0
	for _, s := range out {
		all = append(all, s.Slots...)
		for _, r := range s.Slots {
			total += r.Count()
		}
	}
	merged := slotrange.Merge(all)
	if total != slotrange.Max+1 || len(merged) != 1 || merged[0].Start != 0 || merged[0].End != slotrange.Max {
		return nil, fmt.Errorf("the shards serve %d slots (%s), not each of the %d once", total, describeSlots(merged), slotrange.Max+1)
	}
	return out, nil
}

// SlotStrings are ranges as the status and the manifest show them.
func SlotStrings(ranges []slotrange.Range) []string {
	out := make([]string, len(ranges))
	for i, r := range ranges {
		out[i] = fmt.Sprintf("%d-%d", r.Start, r.End)
	}
	return out
}

func describeSlots(ranges []slotrange.Range) string {
	if len(ranges) == 0 {
		return "none"
	}
	return fmt.Sprint(SlotStrings(ranges))
}
