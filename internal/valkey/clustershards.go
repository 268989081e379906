package valkey

import (
	"fmt"
	"strconv"
)

// Shard is one entry of CLUSTER SHARDS.
type Shard struct {
	Slots []SlotRange
	Nodes []ShardNode
}

// primary returns the shard's node with role "master".
func (s Shard) primary() (ShardNode, bool) {
	for _, n := range s.Nodes {
		if n.Role == shardRolePrimary {
			return n, true
		}
	}
	return ShardNode{}, false
}

// Roles and health values as CLUSTER SHARDS reports them.
const (
	shardRolePrimary = "master"
	shardRoleReplica = "replica"

	healthOnline  = "online"
	healthFailed  = "failed"
	healthLoading = "loading"
)

// ShardNode is one node of a Shard.
type ShardNode struct {
	ID       string
	Endpoint string
	IP       string
	Hostname string
	// Port is the plaintext port; 0 on a TLS-only node.
	Port              int
	TLSPort           int
	Role              string
	ReplicationOffset int64
	Health            string
}

// ParseClusterShards parses a CLUSTER SHARDS reply in the generic form
// valkey-go's ToAny produces. Each shard and node may be a map (RESP3) or
// a flat key/value array (RESP2).
func ParseClusterShards(reply any) ([]Shard, error) {
	return parseEntries(reply, "CLUSTER SHARDS", parseShard)
}

func parseShard(v any) (Shard, error) {
	fields, err := asFields(v)
	if err != nil {
		return Shard{}, err
	}
	var s Shard
	if raw, ok := fields["slots"]; ok {
		bounds, ok := raw.([]any)
		if !ok || len(bounds)%2 != 0 {
			return Shard{}, fmt.Errorf("slots: want an even-length array, got %v", raw)
		}
		for i := 0; i < len(bounds); i += 2 {
			start, err := asInt64(bounds[i])
			if err != nil {
				return Shard{}, fmt.Errorf("slots: %w", err)
			}
			end, err := asInt64(bounds[i+1])
			if err != nil {
				return Shard{}, fmt.Errorf("slots: %w", err)
			}
			r := SlotRange{Start: int(start), End: int(end)}
			if err := r.Validate(); err != nil {
				return Shard{}, fmt.Errorf("slots: %w", err)
			}
			s.Slots = append(s.Slots, r)
		}
	}
	if raw, ok := fields["nodes"]; ok {
		nodes, ok := raw.([]any)
		if !ok {
			return Shard{}, fmt.Errorf("nodes: want an array, got %T", raw)
		}
		for i, nv := range nodes {
			n, err := parseShardNode(nv)
			if err != nil {
				return Shard{}, fmt.Errorf("node %d: %w", i, err)
			}
			s.Nodes = append(s.Nodes, n)
		}
	}
	return s, nil
}

func parseShardNode(v any) (ShardNode, error) {
	fields, err := asFields(v)
	if err != nil {
		return ShardNode{}, err
	}
	n := ShardNode{
		ID:       asString(fields["id"]),
		Endpoint: asString(fields["endpoint"]),
		IP:       asString(fields["ip"]),
		Hostname: asString(fields["hostname"]),
		Role:     asString(fields["role"]),
		Health:   asString(fields["health"]),
	}
	ints := []struct {
		key string
		dst func(int64)
	}{
		{"port", func(x int64) { n.Port = int(x) }},
		{"tls-port", func(x int64) { n.TLSPort = int(x) }},
		{"replication-offset", func(x int64) { n.ReplicationOffset = x }},
	}
	for _, f := range ints {
		raw, ok := fields[f.key]
		if !ok || raw == nil {
			continue
		}
		x, err := asInt64(raw)
		if err != nil {
			return ShardNode{}, fmt.Errorf("%s: %w", f.key, err)
		}
		f.dst(x)
	}
	if n.ID == "" {
		return ShardNode{}, fmt.Errorf("no id")
	}
	return n, nil
}

// parseEntries parses a reply that is an array of entries, each with
// parse; command names the reply in errors.
func parseEntries[T any](reply any, command string, parse func(any) (T, error)) ([]T, error) {
	list, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("parsing %s: want an array, got %T", command, reply)
	}
	out := make([]T, 0, len(list))
	for i, item := range list {
		v, err := parse(item)
		if err != nil {
			return nil, fmt.Errorf("parsing %s entry %d: %w", command, i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// asFields accepts a map or a flat key/value array.
func asFields(v any) (map[string]any, error) {
	switch t := v.(type) {
	case map[string]any:
		return t, nil
	case []any:
		if len(t)%2 != 0 {
			return nil, fmt.Errorf("key/value array has odd length %d", len(t))
		}
		m := make(map[string]any, len(t)/2)
		for i := 0; i < len(t); i += 2 {
			k, ok := t[i].(string)
			if !ok {
				return nil, fmt.Errorf("key %v is %T, not a string", t[i], t[i])
			}
			m[k] = t[i+1]
		}
		return m, nil
	default:
		return nil, fmt.Errorf("want a map or key/value array, got %T", v)
	}
}

func asInt64(v any) (int64, error) {
	switch t := v.(type) {
	case int64:
		return t, nil
	case int:
		return int64(t), nil
	case string:
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", t)
		}
		return n, nil
	default:
		return 0, fmt.Errorf("%v is %T, not an integer", v, v)
	}
}

func asString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case int64:
		return strconv.FormatInt(t, 10)
	default:
		return ""
	}
}
