package valkey

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"
)

// Ping checks the node answers.
func (n *Node) Ping(ctx context.Context) error {
	return n.exec(ctx, "PING", func(b valkey.Builder) valkey.Completed { return b.Ping().Build() })
}

// InfoServer returns the node's INFO SERVER, version included.
func (n *Node) InfoServer(ctx context.Context) (ServerInfo, error) {
	text, err := n.text(ctx, "INFO SERVER", func(b valkey.Builder) valkey.Completed {
		return b.Info().Section("server").Build()
	})
	if err != nil {
		return ServerInfo{}, err
	}
	info, err := parseServerInfo(text)
	return info, n.wrap("INFO SERVER", err)
}

// InfoReplication returns the node's INFO REPLICATION.
func (n *Node) InfoReplication(ctx context.Context) (ReplicationInfo, error) {
	text, err := n.text(ctx, "INFO REPLICATION", func(b valkey.Builder) valkey.Completed {
		return b.Info().Section("replication").Build()
	})
	if err != nil {
		return ReplicationInfo{}, err
	}
	info, err := ParseReplicationInfo(text)
	return info, n.wrap("INFO REPLICATION", err)
}

// NodeInfo is what one INFO call tells about a node for planning.
type NodeInfo struct {
	Server      ServerInfo
	Replication ReplicationInfo
	Memory      MemoryInfo
}

// MemoryInfo is the part of INFO MEMORY that sizes a node's data.
type MemoryInfo struct {
	// Used is used_memory; Dataset is used_memory_dataset, the part that
	// moves with the keys.
	Used, Dataset int64
	// MaxMemory is maxmemory, 0 when unlimited.
	MaxMemory int64
}

// InfoNode reads INFO SERVER, REPLICATION and MEMORY in one round trip.
func (n *Node) InfoNode(ctx context.Context) (NodeInfo, error) {
	text, err := n.text(ctx, "INFO", func(b valkey.Builder) valkey.Completed {
		return b.Info().Section("server", "replication", "memory").Build()
	})
	if err != nil {
		return NodeInfo{}, err
	}
	out, err := nodeInfoFrom(parseInfo(text).flat())
	return out, n.wrap("INFO", err)
}

// nodeInfoFrom is NodeInfo from INFO's fields, sections flattened.
func nodeInfoFrom(fields map[string]string) (NodeInfo, error) {
	var out NodeInfo
	var err error
	if out.Server, err = serverInfoFrom(fields); err != nil {
		return NodeInfo{}, err
	}
	if out.Replication, err = replicationInfoFrom(fields); err != nil {
		return NodeInfo{}, err
	}
	for k, dst := range map[string]*int64{"used_memory": &out.Memory.Used, "used_memory_dataset": &out.Memory.Dataset, "maxmemory": &out.Memory.MaxMemory} {
		if v, ok := fields[k]; ok {
			b, err := parseBytes(v)
			if err != nil {
				return NodeInfo{}, fmt.Errorf("parsing %s %q: %w", k, v, err)
			}
			*dst = b
		}
	}
	return out, nil
}

// parseBytes reads an INFO byte count. Valkey prints them unsigned and
// derives some (used_memory_dataset = used_memory - overhead) by
// subtraction, so right after a mass delete a small negative prints as a
// number near 2^64: that is read as 0, not as an unreadable node.
func parseBytes(v string) (int64, error) {
	u, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if u > math.MaxInt64 {
		return 0, nil
	}
	return int64(u), nil
}

// Info returns the given INFO sections (all default sections when none).
func (n *Node) Info(ctx context.Context, sections ...string) (InfoSections, error) {
	text, err := n.text(ctx, "INFO", func(b valkey.Builder) valkey.Completed {
		if len(sections) == 0 {
			return b.Info().Build()
		}
		return b.Info().Section(sections...).Build()
	})
	if err != nil {
		return nil, err
	}
	return parseInfo(text), nil
}

// AclLoad makes the node reload its ACL file.
func (n *Node) AclLoad(ctx context.Context) error {
	return n.exec(ctx, "ACL LOAD", func(b valkey.Builder) valkey.Completed { return b.AclLoad().Build() })
}

// AclSetUser replaces one user's rules: "reset" then rules, applied by
// Valkey as one change, so the user is never seen half-updated.
func (n *Node) AclSetUser(ctx context.Context, name string, rules ...string) error {
	return n.exec(ctx, "ACL SETUSER "+name, func(b valkey.Builder) valkey.Completed {
		return b.AclSetuser().Username(name).Rule(append([]string{"reset"}, rules...)...).Build()
	})
}

// AclDelUser removes users and disconnects the clients authenticated as them.
func (n *Node) AclDelUser(ctx context.Context, names ...string) error {
	return n.exec(ctx, "ACL DELUSER", func(b valkey.Builder) valkey.Completed {
		return b.AclDeluser().Username(names...).Build()
	})
}

// AclList returns the node's ACL rules, one user per line; the ACL reloader
// compares them with the rendered file.
func (n *Node) AclList(ctx context.Context) ([]string, error) {
	rules, err := n.do(ctx, func(b valkey.Builder) valkey.Completed { return b.AclList().Build() }).AsStrSlice()
	return rules, n.wrap("ACL LIST", err)
}

// ConfigSet sets parameters in one command, so that related settings (the
// TLS certificate, key and CA paths) change together: kv is name, value,
// name, value, ...
func (n *Node) ConfigSet(ctx context.Context, kv ...string) error {
	if len(kv) == 0 || len(kv)%2 != 0 {
		return fmt.Errorf("CONFIG SET on %s: want name/value pairs, got %d arguments", n.addr, len(kv))
	}
	return n.exec(ctx, "CONFIG SET", func(b valkey.Builder) valkey.Completed {
		c := b.ConfigSet().ParameterValue()
		for i := 0; i < len(kv); i += 2 {
			c = c.ParameterValue(kv[i], kv[i+1])
		}
		return c.Build()
	})
}

// ConfigGet returns the parameters matching any of patterns, in one
// command.
func (n *Node) ConfigGet(ctx context.Context, patterns ...string) (map[string]string, error) {
	if len(patterns) == 0 {
		return nil, fmt.Errorf("CONFIG GET on %s: no parameter", n.addr)
	}
	m, err := n.do(ctx, func(b valkey.Builder) valkey.Completed {
		return b.ConfigGet().Parameter(patterns...).Build()
	}).AsStrMap()
	return m, n.wrap("CONFIG GET "+strings.Join(patterns, " "), err)
}
