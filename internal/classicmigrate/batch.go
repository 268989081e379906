package classicmigrate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// Batch is what a classic move of a range of slots still has to set,
// given what the source and the target report now. A move interrupted
// anywhere is finished by planning it again on the same slots.
type Batch struct {
	// Slots are every slot of the range, in order. Both ends are told the
	// owner of each of them at the end, even where they already agree:
	// Valkey 8 replicates SETSLOT to replicas, but a primary that learns
	// the new owner from gossip, after refusing SETSLOT NODE (NOREPLICAS
	// while a replica syncs or is gone), clears its own state without
	// telling them. A repeat of the command is what clears the replicas'
	// copies; on a node that already agrees it changes nothing else.
	Slots []int
	// Importing are the slots the target must still mark IMPORTING from
	// the source: it does not own them and is not importing them from it.
	Importing []int
	// Migrating are the slots the source must still mark MIGRATING to the
	// target: it owns them and is not migrating them to it.
	Migrating []int
}

// PlanBatch plans moving slots from the node from to the node to, each as
// it reports itself in CLUSTER NODES. It refuses when the nodes answer as
// others than fromID and toID, or when neither owns a slot of the range.
func PlanBatch(from, to valkey.ClusterNode, fromID, toID string, slots valkey.SlotRange) (Batch, error) {
	if from.ID != fromID || to.ID != toID {
		return Batch{}, fmt.Errorf("classic migration: nodes answer as %s and %s, expected %s and %s", from.ID, to.ID, fromID, toID)
	}
	var b Batch
	for slot := slots.Start; slot <= slots.End; slot++ {
		fromOwns, toOwns := Owns(from, slot), Owns(to, slot)
		if !fromOwns && !toOwns {
			return Batch{}, fmt.Errorf("moving slot %d: neither the source nor the target owns it", slot)
		}
		b.Slots = append(b.Slots, slot)
		if !toOwns && to.Importing[slot] != fromID {
			b.Importing = append(b.Importing, slot)
		}
		if fromOwns && from.Migrating[slot] != toID {
			b.Migrating = append(b.Migrating, slot)
		}
	}
	return b, nil
}

// Owns says whether n holds slot, as its CLUSTER NODES line says.
func Owns(n valkey.ClusterNode, slot int) bool {
	return slices.ContainsFunc(n.Slots, func(r valkey.SlotRange) bool { return r.Contains(slot) })
}

// KeyGroups orders one round of keys, by slot as CLUSTER GETKEYSINSLOT
// returned them, into one MIGRATE per slot: the slots still holding keys,
// ascending, and each one's keys at the same index.
func KeyGroups(keys map[int][]string) (slots []int, groups [][]string) {
	slots = slices.Sorted(maps.Keys(keys))
	groups = make([][]string, len(slots))
	for i, slot := range slots {
		groups[i] = keys[slot]
	}
	return slots, groups
}
