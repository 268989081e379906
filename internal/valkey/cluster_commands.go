package valkey

import (
	"context"
	"fmt"

	"github.com/valkey-io/valkey-go"
)

// ClusterMyID returns the node's cluster ID.
func (n *Node) ClusterMyID(ctx context.Context) (string, error) {
	id, err := n.do(ctx, func(b valkey.Builder) valkey.Completed { return b.ClusterMyid().Build() }).ToString()
	return id, n.wrap("CLUSTER MYID", err)
}

// ClusterNodes returns the cluster as the node sees it.
func (n *Node) ClusterNodes(ctx context.Context) (ClusterNodes, error) {
	text, err := n.text(ctx, "CLUSTER NODES", func(b valkey.Builder) valkey.Completed { return b.ClusterNodes().Build() })
	if err != nil {
		return nil, err
	}
	nodes, err := parseClusterNodes(text)
	return nodes, n.wrap("CLUSTER NODES", err)
}

// ClusterShards returns the node's view of shards and their health.
func (n *Node) ClusterShards(ctx context.Context) ([]Shard, error) {
	reply, err := n.do(ctx, func(b valkey.Builder) valkey.Completed { return b.ClusterShards().Build() }).ToAny()
	if err != nil {
		return nil, n.wrap("CLUSTER SHARDS", err)
	}
	shards, err := ParseClusterShards(reply)
	return shards, n.wrap("CLUSTER SHARDS", err)
}

// ClusterInfo returns the node's CLUSTER INFO.
func (n *Node) ClusterInfo(ctx context.Context) (ClusterInfo, error) {
	text, err := n.text(ctx, "CLUSTER INFO", func(b valkey.Builder) valkey.Completed { return b.ClusterInfo().Build() })
	if err != nil {
		return ClusterInfo{}, err
	}
	info, err := parseClusterInfo(text)
	return info, n.wrap("CLUSTER INFO", err)
}

// ClusterMeet introduces the node at ip:port to this node's cluster.
// busPort 0 lets Valkey assume port+10000.
func (n *Node) ClusterMeet(ctx context.Context, ip string, port, busPort int) error {
	what := fmt.Sprintf("CLUSTER MEET %s %d %d", ip, port, busPort)
	return n.exec(ctx, what, func(b valkey.Builder) valkey.Completed {
		c := b.ClusterMeet().Ip(ip).Port(int64(port))
		if busPort > 0 {
			return c.ClusterBusPort(int64(busPort)).Build()
		}
		return c.Build()
	})
}

// ClusterForget removes nodeID from this node's table (for about a minute,
// after which gossip can bring it back unless every node forgets it).
func (n *Node) ClusterForget(ctx context.Context, nodeID string) error {
	return n.exec(ctx, "CLUSTER FORGET "+nodeID, func(b valkey.Builder) valkey.Completed {
		return b.ClusterForget().NodeId(nodeID).Build()
	})
}

// ClusterAddSlotsRange assigns the ranges to this node.
func (n *Node) ClusterAddSlotsRange(ctx context.Context, ranges ...SlotRange) error {
	if len(ranges) == 0 {
		return fmt.Errorf("CLUSTER ADDSLOTSRANGE on %s: no ranges", n.addr)
	}
	for _, r := range ranges {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE on %s: %w", n.addr, err)
		}
	}
	return n.exec(ctx, "CLUSTER ADDSLOTSRANGE "+formatSlotRanges(ranges), func(b valkey.Builder) valkey.Completed {
		c := b.ClusterAddslotsrange().StartSlotEndSlot()
		for _, r := range ranges {
			c = c.StartSlotEndSlot(int64(r.Start), int64(r.End))
		}
		return c.Build()
	})
}

// ClusterReplicate makes this node a replica of primaryID.
func (n *Node) ClusterReplicate(ctx context.Context, primaryID string) error {
	return n.exec(ctx, "CLUSTER REPLICATE "+primaryID, func(b valkey.Builder) valkey.Completed {
		return b.ClusterReplicate().NodeId(primaryID).Build()
	})
}

// FailoverMode selects how CLUSTER FAILOVER promotes a replica.
type FailoverMode string

const (
	// FailoverDefault waits for the replica to catch up with a reachable
	// primary: no acknowledged write is lost.
	FailoverDefault FailoverMode = ""
	// FailoverForce skips the handshake with an unreachable primary but
	// still needs a majority of primaries to vote.
	FailoverForce FailoverMode = "FORCE"
	// FailoverTakeover promotes without any vote, for a shard whose quorum
	// is lost.
	FailoverTakeover FailoverMode = "TAKEOVER"
)

// ClusterFailover asks this replica to take over its primary. The reply
// only acknowledges the request; poll the role to see it complete.
func (n *Node) ClusterFailover(ctx context.Context, mode FailoverMode) error {
	what := "CLUSTER FAILOVER"
	if mode != FailoverDefault {
		what += " " + string(mode)
	}
	return n.exec(ctx, what, func(b valkey.Builder) valkey.Completed {
		switch mode {
		case FailoverForce:
			return b.ClusterFailover().Force().Build()
		case FailoverTakeover:
			return b.ClusterFailover().Takeover().Build()
		default:
			return b.ClusterFailover().Build()
		}
	})
}

// SlotState is a CLUSTER SETSLOT subcommand.
type SlotState string

const (
	SlotImporting SlotState = "IMPORTING"
	SlotMigrating SlotState = "MIGRATING"
	SlotNode      SlotState = "NODE"
	SlotStable    SlotState = "STABLE"
)

// ClusterSetSlot changes a slot's state on this node. nodeID is the source
// for IMPORTING, the destination for MIGRATING, the new owner for NODE and
// must be empty for STABLE.
func (n *Node) ClusterSetSlot(ctx context.Context, slot int, state SlotState, nodeID string) error {
	what := fmt.Sprintf("CLUSTER SETSLOT %d %s %s", slot, state, nodeID)
	if slot < 0 || slot > MaxSlot {
		return fmt.Errorf("%s on %s: slot out of range", what, n.addr)
	}
	if (state == SlotStable) != (nodeID == "") {
		return fmt.Errorf("%s on %s: STABLE takes no node ID, the other states need one", what, n.addr)
	}
	return n.exec(ctx, what, func(b valkey.Builder) valkey.Completed {
		s := b.ClusterSetslot().Slot(int64(slot))
		switch state {
		case SlotImporting:
			return s.Importing().NodeId(nodeID).Build()
		case SlotMigrating:
			return s.Migrating().NodeId(nodeID).Build()
		case SlotNode:
			return s.Node().NodeId(nodeID).Build()
		default:
			return s.Stable().Build()
		}
	})
}

// ClusterSetSlots sends CLUSTER SETSLOT for each of slots in one pipeline.
// A node saves (and fsyncs) its cluster config once per pass of its event
// loop, not once per command, so a pipelined batch costs one save where
// slot-by-slot commands cost one each. Every command runs; the first error
// is returned.
func (n *Node) ClusterSetSlots(ctx context.Context, slots []int, state SlotState, nodeID string) error {
	if len(slots) == 0 {
		return nil
	}
	what := fmt.Sprintf("CLUSTER SETSLOT %s %s for %d slots", state, nodeID, len(slots))
	if (state == SlotStable) != (nodeID == "") {
		return fmt.Errorf("%s on %s: STABLE takes no node ID, the other states need one", what, n.addr)
	}
	b := n.client.B()
	cmds := make(valkey.Commands, 0, len(slots))
	for _, slot := range slots {
		if slot < 0 || slot > MaxSlot {
			return fmt.Errorf("%s on %s: slot %d out of range", what, n.addr, slot)
		}
		s := b.ClusterSetslot().Slot(int64(slot))
		switch state {
		case SlotImporting:
			cmds = append(cmds, s.Importing().NodeId(nodeID).Build())
		case SlotMigrating:
			cmds = append(cmds, s.Migrating().NodeId(nodeID).Build())
		case SlotNode:
			cmds = append(cmds, s.Node().NodeId(nodeID).Build())
		default:
			cmds = append(cmds, s.Stable().Build())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	for i, r := range n.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return n.wrap(fmt.Sprintf("CLUSTER SETSLOT %d %s %s", slots[i], state, nodeID), err)
		}
	}
	return nil
}

// ClusterCountKeysInSlot returns how many keys this node holds in slot.
func (n *Node) ClusterCountKeysInSlot(ctx context.Context, slot int) (int64, error) {
	count, err := n.do(ctx, func(b valkey.Builder) valkey.Completed {
		return b.ClusterCountkeysinslot().Slot(int64(slot)).Build()
	}).AsInt64()
	return count, n.wrap(fmt.Sprintf("CLUSTER COUNTKEYSINSLOT %d", slot), err)
}

// ClusterGetKeysInSlots asks for up to count keys of each slot in one
// pipeline and returns the keys of the slots that have any.
func (n *Node) ClusterGetKeysInSlots(ctx context.Context, slots []int, count int) (map[int][]string, error) {
	out := map[int][]string{}
	if len(slots) == 0 {
		return out, nil
	}
	b := n.client.B()
	cmds := make(valkey.Commands, len(slots))
	for i, slot := range slots {
		cmds[i] = b.ClusterGetkeysinslot().Slot(int64(slot)).Count(int64(count)).Build()
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	for i, r := range n.client.DoMulti(ctx, cmds...) {
		keys, err := r.AsStrSlice()
		if err != nil {
			return nil, n.wrap(fmt.Sprintf("CLUSTER GETKEYSINSLOT %d %d", slots[i], count), err)
		}
		if len(keys) > 0 {
			out[slots[i]] = keys
		}
	}
	return out, nil
}

// ClusterGetKeysInSlot returns up to count keys this node holds in slot.
func (n *Node) ClusterGetKeysInSlot(ctx context.Context, slot, count int) ([]string, error) {
	keys, err := n.do(ctx, func(b valkey.Builder) valkey.Completed {
		return b.ClusterGetkeysinslot().Slot(int64(slot)).Count(int64(count)).Build()
	}).AsStrSlice()
	return keys, n.wrap(fmt.Sprintf("CLUSTER GETKEYSINSLOT %d %d", slot, count), err)
}
