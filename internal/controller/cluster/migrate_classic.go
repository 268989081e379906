package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomomento/valkey-operator/internal/classicmigrate"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// Classic resharding moves keys with MIGRATE in batches of this many. Each
// MIGRATE blocks the source while it serialises the batch (about a
// millisecond per thousand small keys), and every batch is a round trip;
// a thousand keeps the stall short and the round trips few.
const classicKeysPerMigrate = 1000

// classicMigrateTimeout is MIGRATE's own I/O timeout towards the target.
const classicMigrateTimeout = 10 * time.Second

// classicMigration moves hash slots from one primary to another the way
// valkey-cli --cluster reshard does, for clusters where some node runs a
// Valkey without CLUSTER MIGRATESLOTS (below 9.0).
//
// Every step first checks what the two nodes already report, so a run
// interrupted anywhere (operator restart, failed MIGRATE, node briefly
// unreachable) is finished by running it again on the same slots; the
// planner re-issues it for any slot left MIGRATING or IMPORTING.
type classicMigration struct {
	from, to     *valkey.Node
	fromID, toID string
	// toHost and toPort are where the source's MIGRATE connects: the target
	// pod's own address. With tls-cluster on, Valkey opens that connection
	// over TLS with the node's certificate, the same way as the bus.
	toHost string
	toPort int
	// user and password authenticate MIGRATE on the target (AUTH2): the
	// operator's system user, which holds +restore-asking there.
	user, password string
	// others are the remaining slot-holding primaries. They are told the
	// new owner directly so their redirects are right before gossip
	// spreads it; a failure there is not an error.
	others []*valkey.Node
}

// run moves every slot of slots as one batch: the slot states of the whole
// batch are set in one pipeline per node, the keys drained slot by slot,
// and the ownership handed over in one pipeline per node. A node saves its
// cluster config once per pipeline rather than once per slot, which is
// what a slot-by-slot move spends most of its time on. It stops at the
// first step it cannot finish; running it again on the same slots picks up
// from what the nodes report.
func (m classicMigration) run(ctx context.Context, slots valkey.SlotRange) error {
	from, err := myself(ctx, m.from)
	if err != nil {
		return err
	}
	to, err := myself(ctx, m.to)
	if err != nil {
		return err
	}
	b, err := classicmigrate.PlanBatch(from, to, m.fromID, m.toID, slots)
	if err != nil {
		return err
	}
	// IMPORTING before MIGRATING: once the source sends ASK redirects the
	// target must already accept them.
	if err := m.to.ClusterSetSlots(ctx, b.Importing, valkey.SlotImporting, m.fromID); err != nil {
		return err
	}
	if err := m.from.ClusterSetSlots(ctx, b.Migrating, valkey.SlotMigrating, m.toID); err != nil {
		return err
	}
	if err := m.drain(ctx, b.Slots); err != nil {
		return err
	}
	// The target first: it bumps its config epoch and claims the slots, so
	// the claim wins over the source's older one everywhere. Then the
	// source, which refuses while it still holds a key of a slot. Both are
	// told every slot of the batch (Batch.Slots says why).
	if err := m.to.ClusterSetSlots(ctx, b.Slots, valkey.SlotNode, m.toID); err != nil {
		return err
	}
	if err := m.from.ClusterSetSlots(ctx, b.Slots, valkey.SlotNode, m.toID); err != nil {
		return err
	}
	for _, o := range m.others {
		_ = o.ClusterSetSlots(ctx, b.Slots, valkey.SlotNode, m.toID)
	}
	return nil
}

// drain migrates every key the source holds in slots to the target, in
// rounds: one pipeline asks for the keys of every slot still holding some,
// one pipeline migrates them, one MIGRATE per slot. Most slots empty in one
// round, so a batch costs a few round trips instead of several per slot.
// REPLACE makes a repeat safe: a key copied by an interrupted MIGRATE whose
// source copy was not deleted is overwritten with the source's, the
// current one. Keys that expired or were deleted meanwhile are skipped (a
// +NOKEY status when none is left), not an error.
func (m classicMigration) drain(ctx context.Context, slots []int) error {
	for len(slots) > 0 {
		keys, err := m.from.ClusterGetKeysInSlots(ctx, slots, classicKeysPerMigrate)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return nil
		}
		var groups [][]string
		slots, groups = classicmigrate.KeyGroups(keys)
		if err := m.from.MigrateEach(ctx, valkey.MigrateArgs{
			Host: m.toHost, Port: m.toPort,
			Username: m.user, Password: m.password,
			Timeout: classicMigrateTimeout, Replace: true,
		}, groups); err != nil {
			return fmt.Errorf("moving slots %v: %w", slots, err)
		}
	}
	return nil
}

func myself(ctx context.Context, n *valkey.Node) (valkey.ClusterNode, error) {
	nodes, err := n.ClusterNodes(ctx)
	if err != nil {
		return valkey.ClusterNode{}, err
	}
	me, ok := nodes.Myself()
	if !ok {
		return valkey.ClusterNode{}, errors.New("CLUSTER NODES on " + n.Address() + " has no myself line")
	}
	return me, nil
}
