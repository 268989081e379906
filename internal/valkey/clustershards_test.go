package valkey

import (
	"reflect"
	"testing"
)

func TestParseClusterShards(t *testing.T) {
	tests := []struct {
		name    string
		reply   any
		want    []Shard
		wantErr bool
	}{
		{
			// valkey-go ToAny of a RESP3 reply from a TLS-only 8.0.1
			// cluster: no "port", a "tls-port" instead.
			name: "RESP3, TLS only",
			reply: []any{
				map[string]any{
					"nodes": []any{
						map[string]any{"endpoint": "127.0.0.1", "health": "online", "hostname": "node-0.test.ns.svc.cluster.local", "id": "4c5ff181d2cf4e450712d0bb6945b1ef316371a1", "ip": "127.0.0.1", "replication-offset": int64(0), "role": "master", "tls-port": int64(45755)},
						map[string]any{"endpoint": "127.0.0.1", "health": "loading", "hostname": "node-2.test.ns.svc.cluster.local", "id": "4155b3bced161ddd26cceb5562399c4c877fc81d", "ip": "127.0.0.1", "replication-offset": int64(0), "role": "replica", "tls-port": int64(43969)},
					},
					"slots": []any{int64(0), int64(5460), int64(10923), int64(16383)},
				},
				map[string]any{
					"nodes": []any{
						map[string]any{"endpoint": "127.0.0.1", "health": "online", "hostname": "node-1.test.ns.svc.cluster.local", "id": "155c4693f0d988df26a85d6ebd020a336fb262b3", "ip": "127.0.0.1", "replication-offset": int64(0), "role": "master", "tls-port": int64(39795)},
					},
					"slots": []any{int64(5461), int64(10922)},
				},
			},
			want: []Shard{
				{
					Slots: []SlotRange{{Start: 0, End: 5460}, {Start: 10923, End: 16383}},
					Nodes: []ShardNode{
						{ID: "4c5ff181d2cf4e450712d0bb6945b1ef316371a1", Endpoint: "127.0.0.1", IP: "127.0.0.1", Hostname: "node-0.test.ns.svc.cluster.local", TLSPort: 45755, Role: shardRolePrimary, Health: healthOnline},
						{ID: "4155b3bced161ddd26cceb5562399c4c877fc81d", Endpoint: "127.0.0.1", IP: "127.0.0.1", Hostname: "node-2.test.ns.svc.cluster.local", TLSPort: 43969, Role: shardRoleReplica, Health: healthLoading},
					},
				},
				{
					Slots: []SlotRange{{Start: 5461, End: 10922}},
					Nodes: []ShardNode{
						{ID: "155c4693f0d988df26a85d6ebd020a336fb262b3", Endpoint: "127.0.0.1", IP: "127.0.0.1", Hostname: "node-1.test.ns.svc.cluster.local", TLSPort: 39795, Role: shardRolePrimary, Health: healthOnline},
					},
				},
			},
		},
		{
			// The same shape over RESP2 (valkey-cli capture of a plaintext
			// 8.0.1 cluster): flat key/value arrays instead of maps.
			name: "RESP2, plaintext",
			reply: []any{
				[]any{
					"slots", []any{int64(5461), int64(9999)},
					"nodes", []any{
						[]any{"id", id1, "port", int64(7101), "ip", "127.0.0.1", "endpoint", "127.0.0.1", "hostname", "node-1.test.ns.svc.cluster.local", "role", "master", "replication-offset", int64(0), "health", "online"},
					},
				},
				[]any{
					"slots", []any{int64(0), int64(5460), int64(10000), int64(16383)},
					"nodes", []any{
						[]any{"id", id0, "port", int64(7100), "ip", "127.0.0.1", "endpoint", "127.0.0.1", "hostname", "node-0.test.ns.svc.cluster.local", "role", "master", "replication-offset", int64(54), "health", "online"},
						[]any{"id", id2, "port", int64(7102), "ip", "127.0.0.1", "endpoint", "127.0.0.1", "hostname", "node-2.test.ns.svc.cluster.local", "role", "replica", "replication-offset", int64(54), "health", "loading"},
					},
				},
			},
			want: []Shard{
				{
					Slots: []SlotRange{{Start: 5461, End: 9999}},
					Nodes: []ShardNode{{ID: id1, Endpoint: "127.0.0.1", IP: "127.0.0.1", Hostname: "node-1.test.ns.svc.cluster.local", Port: 7101, Role: shardRolePrimary, Health: healthOnline}},
				},
				{
					Slots: []SlotRange{{Start: 0, End: 5460}, {Start: 10000, End: 16383}},
					Nodes: []ShardNode{
						{ID: id0, Endpoint: "127.0.0.1", IP: "127.0.0.1", Hostname: "node-0.test.ns.svc.cluster.local", Port: 7100, Role: shardRolePrimary, ReplicationOffset: 54, Health: healthOnline},
						{ID: id2, Endpoint: "127.0.0.1", IP: "127.0.0.1", Hostname: "node-2.test.ns.svc.cluster.local", Port: 7102, Role: shardRoleReplica, ReplicationOffset: 54, Health: healthLoading},
					},
				},
			},
		},
		{
			name:  "shard of replicas without slots",
			reply: []any{map[string]any{"slots": []any{}, "nodes": []any{map[string]any{"id": id2, "role": "replica", "health": "failed", "port": int64(6379)}}}},
			want:  []Shard{{Nodes: []ShardNode{{ID: id2, Role: shardRoleReplica, Health: healthFailed, Port: 6379}}}},
		},
		{name: "empty", reply: []any{}, want: []Shard{}},
		{name: "not an array", reply: "ERR", wantErr: true},
		{name: "odd slots", reply: []any{map[string]any{"slots": []any{int64(0)}}}, wantErr: true},
		{name: "slot out of range", reply: []any{map[string]any{"slots": []any{int64(0), int64(16384)}}}, wantErr: true},
		{name: "node without id", reply: []any{map[string]any{"nodes": []any{map[string]any{"role": "master"}}}}, wantErr: true},
		{name: "odd key/value array", reply: []any{[]any{"slots"}}, wantErr: true},
		{name: "bad port", reply: []any{map[string]any{"nodes": []any{map[string]any{"id": id0, "port": "x"}}}}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseClusterShards(tc.reply)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestShardPrimary(t *testing.T) {
	s := Shard{Nodes: []ShardNode{{ID: id2, Role: shardRoleReplica}, {ID: id0, Role: shardRolePrimary}}}
	if p, ok := s.primary(); !ok || p.ID != id0 {
		t.Fatalf("primary = %+v, %v", p, ok)
	}
	if _, ok := (Shard{Nodes: []ShardNode{{ID: id2, Role: shardRoleReplica}}}).primary(); ok {
		t.Fatal("found a primary among replicas")
	}
}
