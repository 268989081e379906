package render

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The memory budget (memory.go) keeps one fork's share for a persistent
// node as for a node in memory only, because Valkey never runs two
// children at once: a replica's full sync waits for a running rewrite of
// the append-only file. On each installed server a primary with appendonly
// yes rewrites its file slowly (rdb-key-save-delay) while a replica asks
// for a full sync: at no point does the primary run a rewrite child and a
// snapshot child together, the sync was seen waiting for the rewrite, and
// it completes once the rewrite is done.
func TestRewriteAndSyncNeverForkTogether(t *testing.T) {
	for _, s := range valkeyServers(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			port := freePort(t)
			addr := s.run(t, port, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
				"--appendonly", "yes", "--dir", t.TempDir(), "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
			c := dial(t, addr)
			const keys = 1500
			for i := range keys {
				c.must(t, "SET", fmt.Sprintf("k%d", i), "v")
			}
			// A millisecond per key: the rewrite's child runs for about 1.5 s.
			c.must(t, "CONFIG", "SET", "rdb-key-save-delay", "1000")
			c.must(t, "BGREWRITEAOF")
			s.start(t, "--replicaof", "127.0.0.1", strconv.Itoa(port))

			waited := false
			deadline := time.Now().Add(time.Minute)
			for {
				p := info(t, c, "persistence")
				rewriting, snapshotting := p["aof_rewrite_in_progress"] == "1", p["rdb_bgsave_in_progress"] == "1"
				if rewriting && snapshotting {
					t.Fatalf("a rewrite child and a snapshot child at once: %v", p)
				}
				r := info(t, c, "replication")
				if rewriting && r["connected_slaves"] == "1" && !strings.Contains(r["slave0"], "state=online") {
					waited = true
				}
				if strings.Contains(r["slave0"], "state=online") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the replica never came online: %v", r)
				}
				time.Sleep(20 * time.Millisecond) // sampling the children, not waiting for a state
			}
			if !waited {
				t.Fatal("the replica's sync was never seen waiting for the rewrite: the test proved nothing")
			}
		})
	}
}

// info reads one INFO section as fields.
func info(t *testing.T, c *conn, section string) map[string]string {
	t.Helper()
	text, ok := c.must(t, "INFO", section).(string)
	if !ok {
		t.Fatalf("INFO %s: not a bulk string", section)
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}
