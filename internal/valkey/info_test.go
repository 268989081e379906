package valkey

import (
	"reflect"
	"testing"
)

func TestParseInfo(t *testing.T) {
	text := "# Server\r\nvalkey_version:8.0.1\r\nexecutable:/usr/bin/valkey-server\r\n\r\n# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n"
	want := InfoSections{
		"server":   {"valkey_version": "8.0.1", "executable": "/usr/bin/valkey-server"},
		"keyspace": {"db0": "keys=1,expires=0,avg_ttl=0"},
	}
	if got := parseInfo(text); !reflect.DeepEqual(got, want) {
		t.Fatalf("parseInfo = %v, want %v", got, want)
	}
	if got := parseInfo(text).flat()["db0"]; got != "keys=1,expires=0,avg_ttl=0" {
		t.Fatalf("flat()[db0] = %q", got)
	}
}

func TestParseServerInfo(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    ServerInfo
		wantErr bool
	}{
		{
			name: "valkey 8.0.1 reports redis_version 7.2.4",
			text: sample(t, "info-server-8.0.1.txt"),
			want: ServerInfo{
				Version: Version{8, 0, 1}, ServerName: "valkey", Mode: "cluster",
				RunID: "9b7a39b30ee145b95763d5480f4b642b1f427d68", TCPPort: 45755, UptimeSeconds: 5,
			},
		},
		{
			name: "valkey 7.2 has only redis_version",
			text: "# Server\nredis_version:7.2.5\nserver_name:valkey\nserver_mode:standalone\n",
			want: ServerInfo{Version: Version{7, 2, 5}, ServerName: "valkey", Mode: "standalone"},
		},
		{name: "no version", text: "# Server\nserver_name:valkey\n", wantErr: true},
		{name: "bad version", text: "valkey_version:unstable\n", wantErr: true},
		{name: "bad port", text: "valkey_version:8.0.1\ntcp_port:x\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lineEndings(t, tc.text, func(t *testing.T, text string) {
				got, err := parseServerInfo(text)
				if (err != nil) != tc.wantErr {
					t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
				}
				if tc.wantErr {
					return
				}
				got.Fields = nil
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			})
		})
	}
}

func TestParseReplicationInfo(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    ReplicationInfo
		primary bool
		linkUp  bool
		// holds: HoldsPrimaryData, what decides whether a replica may be
		// promoted over a lost primary.
		holds   bool
		wantErr bool
	}{
		{
			name: "primary with one replica",
			text: sample(t, "info-replication-primary-8.0.1.txt"),
			want: ReplicationInfo{
				Role: RolePrimary, FailoverState: "no-failover", ReplicationOffset: 54, LinkDownSeconds: -1,
				Replicas: []ConnectedReplica{{IP: "127.0.0.1", Port: 7102, State: "online", Offset: 54, Lag: 0}},
			},
			primary: true,
		},
		{
			name: "replica in sync",
			text: sample(t, "info-replication-replica-8.0.1.txt"),
			want: ReplicationInfo{
				Role: RoleReplica, PrimaryHost: "127.0.0.1", PrimaryPort: 7100, PrimaryLinkStatus: "up",
				ReplicaOffset: 54, ReplicationOffset: 54, FailoverState: "no-failover", LinkDownSeconds: -1,
			},
			linkUp: true,
			holds:  true,
		},
		{
			name: "replica in initial sync",
			text: "# Replication\nrole:slave\nmaster_host:10.0.0.5\nmaster_port:6379\nmaster_link_status:down\nmaster_sync_in_progress:1\nslave_repl_offset:1\nmaster_repl_offset:0\n",
			want: ReplicationInfo{
				Role: RoleReplica, PrimaryHost: "10.0.0.5", PrimaryPort: 6379, PrimaryLinkStatus: "down",
				PrimarySyncInProgress: true, ReplicaOffset: 1, LinkDownSeconds: -1,
			},
		},
		{
			// As a real 8.0.1 replica reports it once its primary died in
			// the middle of the replica's first sync: it has nothing.
			name: "replica whose primary died during its first sync",
			text: "# Replication\nrole:slave\nmaster_host:10.0.0.5\nmaster_port:6379\nmaster_link_status:down\nmaster_sync_in_progress:0\nslave_repl_offset:1\nmaster_link_down_since_seconds:-1\nmaster_repl_offset:0\n",
			want: ReplicationInfo{
				Role: RoleReplica, PrimaryHost: "10.0.0.5", PrimaryPort: 6379, PrimaryLinkStatus: "down",
				ReplicaOffset: 1, LinkDownSeconds: -1,
			},
		},
		{
			// A synced replica whose primary died a second ago keeps
			// everything up to its offset.
			name: "synced replica whose primary died",
			text: "# Replication\nrole:slave\nmaster_host:10.0.0.5\nmaster_port:6379\nmaster_link_status:down\nmaster_sync_in_progress:0\nslave_repl_offset:163\nmaster_link_down_since_seconds:1\nmaster_repl_offset:163\n",
			want: ReplicationInfo{
				Role: RoleReplica, PrimaryHost: "10.0.0.5", PrimaryPort: 6379, PrimaryLinkStatus: "down",
				ReplicaOffset: 163, ReplicationOffset: 163, LinkDownSeconds: 1,
			},
			holds: true,
		},
		{name: "no role", text: "# Replication\nconnected_slaves:0\n", wantErr: true},
		{name: "bad replica line", text: "role:master\nconnected_slaves:1\nslave0:ip=1.2.3.4,port=x\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lineEndings(t, tc.text, func(t *testing.T, text string) {
				got, err := ParseReplicationInfo(text)
				if (err != nil) != tc.wantErr {
					t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
				}
				if tc.wantErr {
					return
				}
				if got.IsPrimary() != tc.primary || got.LinkUp() != tc.linkUp || got.HoldsPrimaryData() != tc.holds {
					t.Fatalf("IsPrimary %v LinkUp %v HoldsPrimaryData %v, want %v %v %v",
						got.IsPrimary(), got.LinkUp(), got.HoldsPrimaryData(), tc.primary, tc.linkUp, tc.holds)
				}
				got.Fields = nil
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			})
		})
	}
}

func TestParseClusterInfo(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    ClusterInfo
		wantErr bool
	}{
		{
			name: "healthy",
			text: sample(t, "cluster-info-ok-8.0.1.txt"),
			want: ClusterInfo{State: "ok", SlotsAssigned: 16384, SlotsOK: 16384, KnownNodes: 3, Size: 2, CurrentEpoch: 2},
		},
		{
			name: "primary possibly failed",
			text: sample(t, "cluster-info-pfail-8.0.1.txt"),
			want: ClusterInfo{State: "fail", SlotsAssigned: 16384, SlotsOK: 11845, SlotsPFail: 4539, KnownNodes: 3, Size: 2, CurrentEpoch: 2},
		},
		{
			name: "fresh node",
			text: "cluster_state:fail\ncluster_slots_assigned:0\ncluster_known_nodes:1\ncluster_size:0\ncluster_current_epoch:0\ncluster_my_epoch:0\n",
			want: ClusterInfo{State: "fail", KnownNodes: 1},
		},
		{name: "not cluster info", text: "# Server\nvalkey_version:8.0.1\n", wantErr: true},
		{name: "bad number", text: "cluster_state:ok\ncluster_size:two\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lineEndings(t, tc.text, func(t *testing.T, text string) {
				got, err := parseClusterInfo(text)
				if (err != nil) != tc.wantErr {
					t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
				}
				if tc.wantErr {
					return
				}
				got.Fields = nil
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			})
		})
	}
}

func TestStripVerbatimPrefix(t *testing.T) {
	tests := []struct{ in, want string }{
		// valkey-go keeps the RESP3 verbatim format prefix.
		{"txt:cluster_state:ok\r\n", "cluster_state:ok\r\n"},
		{"mkd:# title", "# title"},
		{"cluster_state:ok", "cluster_state:ok"},
		{"d4835202a04a3444827a39e41dde2515cad34182 127.0.0.1:7100@17100 myself,master", "d4835202a04a3444827a39e41dde2515cad34182 127.0.0.1:7100@17100 myself,master"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := stripVerbatimPrefix(tc.in); got != tc.want {
			t.Errorf("stripVerbatimPrefix(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
