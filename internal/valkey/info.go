package valkey

import (
	"fmt"
	"strconv"
	"strings"
)

// InfoSections is parsed INFO output: lower-cased section name ("server",
// "replication", ...) to its key/value fields.
type InfoSections map[string]map[string]string

// parseInfo parses the text INFO returns. Fields before any "# Section"
// header land in section "".
func parseInfo(text string) InfoSections {
	out := InfoSections{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		if name, ok := strings.CutPrefix(line, "#"); ok {
			section = strings.ToLower(strings.TrimSpace(name))
			if out[section] == nil {
				out[section] = map[string]string{}
			}
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if out[section] == nil {
			out[section] = map[string]string{}
		}
		out[section][key] = value
	}
	return out
}

// flat merges every section into one map; INFO keys are unique across
// sections.
func (s InfoSections) flat() map[string]string {
	out := map[string]string{}
	for _, fields := range s {
		for k, v := range fields {
			out[k] = v
		}
	}
	return out
}

// ServerInfo is the typed part of INFO SERVER.
type ServerInfo struct {
	// Version is the Valkey version. Valkey reports a frozen
	// redis_version (7.2.4) for compatibility; valkey_version is the real one.
	Version    Version
	ServerName string
	// Mode is "standalone", "cluster" or "sentinel".
	Mode          string
	RunID         string
	TCPPort       int
	UptimeSeconds int64
	Fields        map[string]string
}

// parseServerInfo extracts ServerInfo from INFO SERVER output.
func parseServerInfo(text string) (ServerInfo, error) {
	return serverInfoFrom(parseInfo(text).flat())
}

// serverInfoFrom is ServerInfo from INFO's fields, sections flattened.
func serverInfoFrom(fields map[string]string) (ServerInfo, error) {
	raw, ok := fields["valkey_version"]
	if !ok {
		// Valkey 7.2 predates valkey_version; its redis_version is real.
		raw, ok = fields["redis_version"]
	}
	if !ok {
		return ServerInfo{}, fmt.Errorf("parsing INFO SERVER: no valkey_version or redis_version field")
	}
	v, err := ParseVersion(raw)
	if err != nil {
		return ServerInfo{}, fmt.Errorf("parsing INFO SERVER: %w", err)
	}
	info := ServerInfo{
		Version:    v,
		ServerName: fields["server_name"],
		Mode:       fields["server_mode"],
		RunID:      fields["run_id"],
		Fields:     fields,
	}
	if info.TCPPort, err = optionalInt(fields, "tcp_port"); err != nil {
		return ServerInfo{}, fmt.Errorf("parsing INFO SERVER: %w", err)
	}
	if info.UptimeSeconds, err = optionalInt64(fields, "uptime_in_seconds"); err != nil {
		return ServerInfo{}, fmt.Errorf("parsing INFO SERVER: %w", err)
	}
	return info, nil
}

// Replication roles as INFO REPLICATION reports them.
const (
	RolePrimary = "master"
	RoleReplica = "slave"
)

// ConnectedReplica is one "slaveN:" line of a primary's INFO REPLICATION.
type ConnectedReplica struct {
	IP     string
	Port   int
	State  string
	Offset int64
	Lag    int64
}

// ReplicationInfo is the typed part of INFO REPLICATION.
type ReplicationInfo struct {
	// Role is RolePrimary or RoleReplica.
	Role string

	// Set on a replica.
	PrimaryHost           string
	PrimaryPort           int
	PrimaryLinkStatus     string
	PrimarySyncInProgress bool
	// ReplicaOffset is the offset this replica has applied.
	ReplicaOffset int64
	// LinkDownSeconds is master_link_down_since_seconds while a replica's
	// link is down: -1 when it never completed a sync with its primary
	// (Valkey's own "no data" mark, which keeps such a replica out of
	// elections), 0 while the link is up.
	LinkDownSeconds int64

	// ReplicationOffset is master_repl_offset: on a primary the offset it has
	// produced, on a replica the offset it has received from its primary.
	ReplicationOffset int64
	FailoverState     string
	Replicas          []ConnectedReplica
	Fields            map[string]string
}

// IsPrimary reports whether the node is a primary.
func (r ReplicationInfo) IsPrimary() bool { return r.Role == RolePrimary }

// LinkUp reports whether a replica's link to its primary is up and not
// in an initial sync.
func (r ReplicationInfo) LinkUp() bool {
	return r.Role == RoleReplica && r.PrimaryLinkStatus == "up" && !r.PrimarySyncInProgress
}

// HoldsPrimaryData reports whether a replica completed a sync with its
// primary at some point and still holds that data, up to ReplicaOffset,
// whether or not its link is up now. A replica still in its first sync,
// or never connected, holds nothing: promoting it empties the shard.
func (r ReplicationInfo) HoldsPrimaryData() bool {
	if r.Role != RoleReplica {
		return false
	}
	if r.PrimaryLinkStatus == "up" {
		return !r.PrimarySyncInProgress
	}
	return r.LinkDownSeconds >= 0
}

// ParseReplicationInfo extracts ReplicationInfo from INFO REPLICATION output.
func ParseReplicationInfo(text string) (ReplicationInfo, error) {
	return replicationInfoFrom(parseInfo(text).flat())
}

// replicationInfoFrom is ReplicationInfo from INFO's fields, sections
// flattened.
func replicationInfoFrom(fields map[string]string) (ReplicationInfo, error) {
	info := ReplicationInfo{
		Role:              fields["role"],
		PrimaryHost:       fields["master_host"],
		PrimaryLinkStatus: fields["master_link_status"],
		FailoverState:     fields["master_failover_state"],
		Fields:            fields,
	}
	if info.Role == "" {
		return ReplicationInfo{}, fmt.Errorf("parsing INFO REPLICATION: no role field")
	}
	var err error
	if info.PrimaryPort, err = optionalInt(fields, "master_port"); err != nil {
		return ReplicationInfo{}, fmt.Errorf("parsing INFO REPLICATION: %w", err)
	}
	syncing, err := optionalInt(fields, "master_sync_in_progress")
	if err != nil {
		return ReplicationInfo{}, fmt.Errorf("parsing INFO REPLICATION: %w", err)
	}
	info.PrimarySyncInProgress = syncing != 0
	if info.ReplicaOffset, err = optionalInt64(fields, "slave_repl_offset"); err != nil {
		return ReplicationInfo{}, fmt.Errorf("parsing INFO REPLICATION: %w", err)
	}
	if info.ReplicationOffset, err = optionalInt64(fields, "master_repl_offset"); err != nil {
		return ReplicationInfo{}, fmt.Errorf("parsing INFO REPLICATION: %w", err)
	}
	// Absent, the link's history is unknown: count it as never synced.
	info.LinkDownSeconds = -1
	if _, ok := fields["master_link_down_since_seconds"]; ok {
		if info.LinkDownSeconds, err = optionalInt64(fields, "master_link_down_since_seconds"); err != nil {
			return ReplicationInfo{}, fmt.Errorf("parsing INFO REPLICATION: %w", err)
		}
	}
	connected, err := optionalInt(fields, "connected_slaves")
	if err != nil {
		return ReplicationInfo{}, fmt.Errorf("parsing INFO REPLICATION: %w", err)
	}
	for i := 0; i < connected; i++ {
		line, ok := fields["slave"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		r, err := parseConnectedReplica(line)
		if err != nil {
			return ReplicationInfo{}, fmt.Errorf("parsing INFO REPLICATION slave%d: %w", i, err)
		}
		info.Replicas = append(info.Replicas, r)
	}
	return info, nil
}

// parseConnectedReplica parses "ip=10.0.0.5,port=6379,state=online,offset=54,lag=0,type=replica".
func parseConnectedReplica(line string) (ConnectedReplica, error) {
	kv := map[string]string{}
	for _, part := range strings.Split(line, ",") {
		k, v, _ := strings.Cut(part, "=")
		kv[k] = v
	}
	r := ConnectedReplica{IP: kv["ip"], State: kv["state"]}
	var err error
	if r.Port, err = optionalInt(kv, "port"); err != nil {
		return ConnectedReplica{}, err
	}
	if r.Offset, err = optionalInt64(kv, "offset"); err != nil {
		return ConnectedReplica{}, err
	}
	if r.Lag, err = optionalInt64(kv, "lag"); err != nil {
		return ConnectedReplica{}, err
	}
	return r, nil
}

func optionalInt(fields map[string]string, key string) (int, error) {
	v, ok := fields[key]
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("field %s=%q is not an integer", key, v)
	}
	return n, nil
}

func optionalInt64(fields map[string]string, key string) (int64, error) {
	v, ok := fields[key]
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s=%q is not an integer", key, v)
	}
	return n, nil
}
