package valkey

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"
)

// MigrateArgs describes one MIGRATE of keys to another node (classic
// resharding on Valkey 8.x). MIGRATE needs key access and, on the target,
// RESTORE-ASKING and SELECT for the user it authenticates as.
type MigrateArgs struct {
	Host string
	Port int
	Keys []string
	// Username and Password authenticate on the destination (AUTH2);
	// empty means no AUTH.
	Username string
	Password string
	// Timeout is MIGRATE's own I/O timeout towards the destination.
	Timeout time.Duration
	Replace bool
	Copy    bool
}

// Migrate moves keys to another node with MIGRATE ... KEYS. Keys that no
// longer exist are skipped by the server; that is not an error.
func (n *Node) Migrate(ctx context.Context, a MigrateArgs) error {
	what := fmt.Sprintf("MIGRATE to %s:%d (%d keys)", a.Host, a.Port, len(a.Keys))
	if len(a.Keys) == 0 {
		return fmt.Errorf("%s on %s: no keys", what, n.addr)
	}
	if a.Timeout <= 0 {
		a.Timeout = n.timeout
	}
	err := n.doWithin(ctx, n.timeout+a.Timeout, func(b valkey.Builder) valkey.Completed {
		return migrateCommand(b, a, a.Keys)
	}).Error()
	return n.wrap(what, err)
}

// MigrateEach runs one MIGRATE per key group, all in one pipeline: the
// source still moves them one after the other, but the round trips of all
// but the first are saved. The groups share a's target and options (its
// Keys are ignored); each group must hold keys of one slot.
func (n *Node) MigrateEach(ctx context.Context, a MigrateArgs, groups [][]string) error {
	if len(groups) == 0 {
		return nil
	}
	if a.Timeout <= 0 {
		a.Timeout = n.timeout
	}
	b := n.client.B()
	cmds := make(valkey.Commands, len(groups))
	for i, keys := range groups {
		if len(keys) == 0 {
			return fmt.Errorf("MIGRATE to %s:%d on %s: group %d has no keys", a.Host, a.Port, n.addr, i)
		}
		cmds[i] = migrateCommand(b, a, keys)
	}
	// Each MIGRATE may take up to its own timeout; the source runs them in
	// turn.
	ctx, cancel := context.WithTimeout(ctx, n.timeout+time.Duration(len(groups))*a.Timeout)
	defer cancel()
	for i, r := range n.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return n.wrap(fmt.Sprintf("MIGRATE to %s:%d (%d keys from %q)", a.Host, a.Port, len(groups[i]), groups[i][0]), err)
		}
	}
	return nil
}

func migrateCommand(b valkey.Builder, a MigrateArgs, keys []string) valkey.Completed {
	args := []string{a.Host, strconv.Itoa(a.Port), "", "0", strconv.FormatInt(a.Timeout.Milliseconds(), 10)}
	if a.Copy {
		args = append(args, "COPY")
	}
	if a.Replace {
		args = append(args, "REPLACE")
	}
	if a.Username != "" {
		args = append(args, "AUTH2", a.Username, a.Password)
	} else if a.Password != "" {
		args = append(args, "AUTH", a.Password)
	}
	args = append(args, "KEYS")
	return b.Arbitrary("MIGRATE").Args(args...).Keys(keys...).Build()
}

// ClusterMigrateSlots starts an atomic slot migration of ranges from this
// node (their owner) to targetID. Valkey >= 9 only; older servers yield
// errNotSupported. The reply only means the job started: follow it with
// ClusterGetSlotMigrations.
func (n *Node) ClusterMigrateSlots(ctx context.Context, targetID string, ranges ...SlotRange) error {
	what := fmt.Sprintf("CLUSTER MIGRATESLOTS SLOTSRANGE %s NODE %s", formatSlotRanges(ranges), targetID)
	if len(ranges) == 0 {
		return fmt.Errorf("%s on %s: no ranges", what, n.addr)
	}
	for _, r := range ranges {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("%s on %s: %w", what, n.addr, err)
		}
	}
	err := n.do(ctx, func(b valkey.Builder) valkey.Completed {
		c := b.ClusterMigrateslots().Slotsrange()
		for _, r := range ranges {
			c = c.Slotsrange(int64(r.Start), int64(r.End))
		}
		return c.Node(targetID).Build()
	}).Error()
	return n.wrap(what, notSupported(err))
}

// ClusterGetSlotMigrations lists running and recently finished atomic slot
// migrations (Valkey >= 9).
func (n *Node) ClusterGetSlotMigrations(ctx context.Context) ([]SlotMigration, error) {
	const what = "CLUSTER GETSLOTMIGRATIONS"
	reply, err := n.do(ctx, func(b valkey.Builder) valkey.Completed {
		return b.ClusterGetslotmigrations().Build()
	}).ToAny()
	if err != nil {
		return nil, n.wrap(what, notSupported(err))
	}
	migrations, err := parseSlotMigrations(reply)
	return migrations, n.wrap(what, err)
}

// ClusterCancelSlotMigrations cancels every running atomic slot migration
// this node exports (Valkey >= 9). Nothing to cancel is not an error.
func (n *Node) ClusterCancelSlotMigrations(ctx context.Context) error {
	err := n.do(ctx, func(b valkey.Builder) valkey.Completed {
		return b.ClusterCancelslotmigrations().Build()
	}).Error()
	if serverErrorContains(err, "no migrations ongoing") {
		return nil
	}
	return n.wrap("CLUSTER CANCELSLOTMIGRATIONS", notSupported(err))
}

func notSupported(err error) error {
	if err != nil && isUnknownCommand(err) {
		return fmt.Errorf("%w: %w", errNotSupported, err)
	}
	return err
}
