package looks

import (
	"testing"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// infoLook is a look of a Valkey 8 node whose replication section holds
// fields; with no fields it does not parse.
func infoLook(fields map[string]string) valkey.Look {
	if len(fields) == 0 {
		return valkey.Look{Sections: valkey.InfoSections{}}
	}
	return valkey.Look{Sections: valkey.InfoSections{"server": {"valkey_version": "8.1.1"}, "replication": fields}}
}

func replica(link, host, syncing string) map[string]string {
	return map[string]string{"role": "slave", "master_host": host, "master_port": "6379", "master_link_status": link,
		"master_sync_in_progress": syncing, "slave_repl_offset": "100"}
}

func primary(replicas int, offset string) map[string]string {
	f := map[string]string{"role": "master", "connected_slaves": "0", "master_repl_offset": offset}
	if replicas > 0 {
		f["connected_slaves"] = "1"
		f["slave0"] = "ip=10.0.0.2,port=6379,state=online,offset=" + offset + ",lag=0"
	}
	return f
}

func TestVitalsChanged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kept, cur map[string]string
		want      bool
	}{
		{"a primary's offset moved", primary(1, "100"), primary(1, "900"), false},
		{"a replica's offset moved", replica("up", "10.0.0.1", "0"), map[string]string{"role": "slave", "master_host": "10.0.0.1",
			"master_port": "6379", "master_link_status": "up", "master_sync_in_progress": "0", "slave_repl_offset": "900"}, false},
		{"a primary became a replica", primary(1, "100"), replica("up", "10.0.0.2", "0"), true},
		{"a replica became a primary", replica("up", "10.0.0.1", "0"), primary(0, "100"), true},
		{"a replica's link went down", replica("up", "10.0.0.1", "0"), replica("down", "10.0.0.1", "0"), true},
		{"a replica's link came up", replica("down", "10.0.0.1", "0"), replica("up", "10.0.0.1", "0"), true},
		{"a replica follows another primary", replica("up", "10.0.0.1", "0"), replica("up", "10.0.0.3", "0"), true},
		{"a replica loads its primary's data", replica("up", "10.0.0.1", "0"), replica("up", "10.0.0.1", "1"), true},
		{"a primary lost its replica", primary(1, "100"), primary(0, "100"), true},
		{"a primary gained a replica", primary(0, "100"), primary(1, "100"), true},
		{"the answer no longer parses", primary(0, "100"), map[string]string{}, true},
		{"the answer parses again", map[string]string{}, primary(0, "100"), true},
		{"neither parses", map[string]string{}, map[string]string{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := vitalsChanged(infoLook(tc.kept), infoLook(tc.cur)); got != tc.want {
				t.Fatalf("vitalsChanged(%v, %v) = %v, want %v", tc.kept, tc.cur, got, tc.want)
			}
		})
	}
}

// vitalsChanged is the comparison Store.sampled makes.
func vitalsChanged(kept, cur valkey.Look) bool {
	return vitalsOf(kept) != vitalsOf(cur)
}
