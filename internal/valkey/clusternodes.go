package valkey

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Node flags as CLUSTER NODES prints them.
const (
	FlagMyself     = "myself"
	FlagPrimary    = "master"
	FlagReplica    = "slave"
	FlagPFail      = "fail?"
	FlagFail       = "fail"
	FlagHandshake  = "handshake"
	FlagNoAddr     = "noaddr"
	FlagNoFailover = "nofailover"
	FlagNoFlags    = "noflags"
)

// Link states as CLUSTER NODES prints them.
const (
	linkConnected    = "connected"
	linkDisconnected = "disconnected"
)

// ClusterNode is one line of CLUSTER NODES as seen by the node that
// answered.
type ClusterNode struct {
	ID string
	// Addr is the "ip:port@cport" field without the hostname.
	Addr     string
	IP       string
	Port     int
	BusPort  int
	Hostname string
	// Aux holds "key=value" fields after the hostname; only nodes.conf
	// carries them (tls-port, shard-id, ...).
	Aux   map[string]string
	Flags []string
	// PrimaryID is the primary a replica follows; "" for a primary.
	PrimaryID   string
	PingSent    int64
	PongRecv    int64
	ConfigEpoch int64
	LinkState   string
	Slots       []SlotRange
	// Importing maps a slot to the node it is being imported from.
	Importing map[int]string
	// Migrating maps a slot to the node it is being migrated to.
	Migrating map[int]string
}

// HasFlag reports whether n carries flag.
func (n ClusterNode) HasFlag(flag string) bool { return slices.Contains(n.Flags, flag) }

// Myself reports whether n is the node that answered.
func (n ClusterNode) Myself() bool { return n.HasFlag(FlagMyself) }

// IsPrimary reports whether n is a primary.
func (n ClusterNode) IsPrimary() bool { return n.HasFlag(FlagPrimary) }

// IsReplica reports whether n is a replica.
func (n ClusterNode) IsReplica() bool { return n.HasFlag(FlagReplica) }

// Failing reports whether n is flagged as failed or possibly failed.
func (n ClusterNode) Failing() bool { return n.HasFlag(FlagFail) || n.HasFlag(FlagPFail) }

// SlotCount returns how many slots n serves.
func (n ClusterNode) SlotCount() int { return CountSlots(n.Slots) }

// ClusterNodes is parsed CLUSTER NODES output.
type ClusterNodes []ClusterNode

// Myself returns the node that answered.
func (ns ClusterNodes) Myself() (ClusterNode, bool) {
	for _, n := range ns {
		if n.Myself() {
			return n, true
		}
	}
	return ClusterNode{}, false
}

// ByID returns the node with the given ID.
func (ns ClusterNodes) ByID(id string) (ClusterNode, bool) {
	for _, n := range ns {
		if n.ID == id {
			return n, true
		}
	}
	return ClusterNode{}, false
}

// replicasOf returns the nodes that follow primaryID.
func (ns ClusterNodes) replicasOf(primaryID string) ClusterNodes {
	var out ClusterNodes
	for _, n := range ns {
		if n.PrimaryID == primaryID && n.IsReplica() {
			out = append(out, n)
		}
	}
	return out
}

// assignedSlots returns the merged slot ranges served by any node.
func (ns ClusterNodes) assignedSlots() []SlotRange {
	var all []SlotRange
	for _, n := range ns {
		all = append(all, n.Slots...)
	}
	return mergeSlotRanges(all)
}

// parseClusterNodes parses CLUSTER NODES output (or a nodes.conf, whose
// "vars" line is skipped).
func parseClusterNodes(text string) (ClusterNodes, error) {
	var out ClusterNodes
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "vars ") {
			continue
		}
		n, err := parseClusterNodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("parsing CLUSTER NODES line %d: %w", i+1, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseClusterNodeLine parses one CLUSTER NODES line:
//
//	<id> <ip:port@cport[,hostname]> <flags> <primary> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot>...
func parseClusterNodeLine(line string) (ClusterNode, error) {
	f := strings.Fields(line)
	if len(f) < 8 {
		return ClusterNode{}, fmt.Errorf("want at least 8 fields, got %d in %q", len(f), line)
	}
	n := ClusterNode{ID: f[0], LinkState: f[7]}
	if err := parseNodeAddress(f[1], &n); err != nil {
		return ClusterNode{}, fmt.Errorf("node %s: %w", n.ID, err)
	}
	if f[2] != "" {
		n.Flags = strings.Split(f[2], ",")
	}
	if f[3] != "-" {
		n.PrimaryID = f[3]
	}
	nums := []struct {
		name string
		text string
		dst  *int64
	}{
		{"ping-sent", f[4], &n.PingSent},
		{"pong-recv", f[5], &n.PongRecv},
		{"config-epoch", f[6], &n.ConfigEpoch},
	}
	for _, num := range nums {
		v, err := strconv.ParseInt(num.text, 10, 64)
		if err != nil {
			return ClusterNode{}, fmt.Errorf("node %s: %s %q is not an integer", n.ID, num.name, num.text)
		}
		*num.dst = v
	}
	for _, tok := range f[8:] {
		if err := parseSlotToken(tok, &n); err != nil {
			return ClusterNode{}, fmt.Errorf("node %s: %w", n.ID, err)
		}
	}
	return n, nil
}

// parseNodeAddress parses "ip:port@cport[,hostname][,key=value...]". The
// IP may be empty (noaddr) or IPv6 without brackets, so the port is what
// follows the last colon.
func parseNodeAddress(field string, n *ClusterNode) error {
	parts := strings.Split(field, ",")
	n.Addr = parts[0]
	for i, p := range parts[1:] {
		if k, v, ok := strings.Cut(p, "="); ok {
			if n.Aux == nil {
				n.Aux = map[string]string{}
			}
			n.Aux[k] = v
		} else if i == 0 {
			n.Hostname = p
		}
	}
	hostPort, busText, hasBus := strings.Cut(n.Addr, "@")
	colon := strings.LastIndexByte(hostPort, ':')
	if colon < 0 {
		return fmt.Errorf("address %q has no port", field)
	}
	n.IP = strings.Trim(hostPort[:colon], "[]")
	port, err := strconv.Atoi(hostPort[colon+1:])
	if err != nil {
		return fmt.Errorf("address %q: port is not an integer", field)
	}
	n.Port = port
	if hasBus {
		bus, err := strconv.Atoi(busText)
		if err != nil {
			return fmt.Errorf("address %q: bus port is not an integer", field)
		}
		n.BusPort = bus
	}
	return nil
}

// parseSlotToken handles "0-5460", "42", "[42->-<id>]" (migrating to id)
// and "[42-<-<id>]" (importing from id).
func parseSlotToken(tok string, n *ClusterNode) error {
	inner, ok := strings.CutPrefix(tok, "[")
	if !ok {
		r, err := parseSlotRange(tok)
		if err != nil {
			return err
		}
		n.Slots = append(n.Slots, r)
		return nil
	}
	inner, ok = strings.CutSuffix(inner, "]")
	if !ok {
		return fmt.Errorf("unterminated slot state %q", tok)
	}
	if slotText, id, ok := strings.Cut(inner, "->-"); ok {
		slot, err := parseSlot(slotText)
		if err != nil {
			return fmt.Errorf("slot state %q: %w", tok, err)
		}
		if n.Migrating == nil {
			n.Migrating = map[int]string{}
		}
		n.Migrating[slot] = id
		return nil
	}
	if slotText, id, ok := strings.Cut(inner, "-<-"); ok {
		slot, err := parseSlot(slotText)
		if err != nil {
			return fmt.Errorf("slot state %q: %w", tok, err)
		}
		if n.Importing == nil {
			n.Importing = map[int]string{}
		}
		n.Importing[slot] = id
		return nil
	}
	return fmt.Errorf("unknown slot state %q", tok)
}

func parseSlot(s string) (int, error) {
	slot, err := strconv.Atoi(s)
	if err != nil || slot < 0 || slot > MaxSlot {
		return 0, fmt.Errorf("slot %q is not in 0..%d", s, MaxSlot)
	}
	return slot, nil
}
