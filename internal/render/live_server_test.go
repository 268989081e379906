package render

import (
	"errors"
	"slices"
	"testing"
)

// liveExamples is a valid value, other than the default, of every live
// setting, as a user would write it in a ValkeyConfig.
var liveExamples = map[string]string{
	"maxmemory":                   "64mb",
	"maxmemory-policy":            "allkeys-lru",
	"maxmemory-samples":           "7",
	"maxmemory-eviction-tenacity": "20",
	"lazyfree-lazy-eviction":      "yes",
	"lazyfree-lazy-expire":        "yes",
	"lazyfree-lazy-server-del":    "yes",
	"lazyfree-lazy-user-del":      "yes",
	"lazyfree-lazy-user-flush":    "yes",
	"active-expire-effort":        "3",
	"timeout":                     "300",
	"tcp-keepalive":               "60",
	"loglevel":                    "warning",
	"slowlog-log-slower-than":     "5000",
	"slowlog-max-len":             "256",
	"latency-monitor-threshold":   "100",
	"hz":                          "20",
	"repl-backlog-size":           "16mb",
	"repl-timeout":                "30",
	"repl-diskless-sync-delay":    "2",
	"client-query-buffer-limit":   "512mb",
	"proto-max-bulk-len":          "256mb",
	"hash-max-listpack-entries":   "256",
	"hash-max-listpack-value":     "128",
	"list-max-listpack-size":      "-3",
	"set-max-intset-entries":      "1024",
	"zset-max-listpack-entries":   "256",
	"zset-max-listpack-value":     "128",
	"min-replicas-to-write":       "1",
	"min-replicas-max-lag":        "20",
}

// TestLiveSettingsAreLive proves the live table against every Valkey
// release the operator supports: each entry is accepted by CONFIG SET on a
// running cluster-enabled server and read back (CONFIG GET) as the value
// set, so drift is not reported for a value the node runs; directives
// outside the table are refused, so the table draws a real line.
func TestLiveSettingsAreLive(t *testing.T) {
	if missing := slices.DeleteFunc(LiveSettingNames(), func(k string) bool { _, ok := liveExamples[k]; return ok }); len(missing) > 0 {
		t.Fatalf("no example value for live settings %q", missing)
	}
	for _, server := range valkeyServers(t) {
		t.Run(server.name, func(t *testing.T) {
			c := dial(t, server.start(t, "--cluster-enabled", "yes", "--cluster-config-file", t.TempDir()+"/nodes.conf"))
			for _, k := range LiveSettingNames() {
				if _, err := c.do("CONFIG", "SET", k, liveExamples[k]); err != nil {
					t.Errorf("CONFIG SET %s %s: %v", k, liveExamples[k], err)
				}
			}
			reply, err := c.do(append([]string{"CONFIG", "GET"}, LiveSettingNames()...)...)
			if err != nil {
				t.Fatalf("CONFIG GET: %v", err)
			}
			running := configPairs(t, reply)
			if drift := LiveDrift(liveExamples, running); len(drift) > 0 {
				for _, k := range drift {
					t.Errorf("%s: set %q, CONFIG GET says %q", k, liveExamples[k], running[k])
				}
			}
			// databases, and tcp-backlog, which the end-to-end tests edit to
			// roll a cluster, are read only at start.
			for _, restart := range [][2]string{{"databases", "4"}, {"tcp-backlog", "256"}} {
				if isLive(restart[0]) {
					t.Fatalf("%s is in liveSettings", restart[0])
				}
				var refused errReply
				if _, err := c.do("CONFIG", "SET", restart[0], restart[1]); !errors.As(err, &refused) {
					t.Errorf("CONFIG SET %s = %v, want it refused", restart[0], err)
				}
			}
		})
	}
}

// configPairs reads a CONFIG GET reply: name, value, name, value, ...
func configPairs(t *testing.T, reply any) map[string]string {
	t.Helper()
	items, ok := reply.([]any)
	if !ok || len(items)%2 != 0 {
		t.Fatalf("CONFIG GET reply %v", reply)
	}
	out := map[string]string{}
	for i := 0; i < len(items); i += 2 {
		k, _ := items[i].(string)
		v, _ := items[i+1].(string)
		out[k] = v
	}
	if len(out) == 0 {
		t.Fatalf("CONFIG GET answered nothing: %v", reply)
	}
	return out
}
