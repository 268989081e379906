package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// liveKind says how CONFIG GET spells back a value written to valkey.conf,
// so that the value a node runs can be compared with the rendered one.
type liveKind int

const (
	// liveWord is a keyword (a policy, yes or no, a log level): any case.
	liveWord liveKind = iota
	// liveInteger is a plain number, possibly negative.
	liveInteger
	// liveBytes is a memory size, written with or without a unit (64mb)
	// and read back in bytes.
	liveBytes
)

// liveSettings are the directives every supported Valkey release (8.0 and
// 9.x; TestLiveSettingsAreLive sets each on a real server of each) changes
// at run time through CONFIG SET. An edit of these alone is applied to the
// running nodes in place and written into their valkey.conf for the next
// start: no pod is replaced. Any other directive needs a restart, so a
// change to it rolls the cluster. client-output-buffer-limit is live in
// Valkey but left out: CONFIG GET answers with every client class, so a
// rendered value cannot be compared with it directly.
var liveSettings = map[string]liveKind{
	"maxmemory":                   liveBytes,
	"maxmemory-policy":            liveWord,
	"maxmemory-samples":           liveInteger,
	"maxmemory-eviction-tenacity": liveInteger,
	"lazyfree-lazy-eviction":      liveWord,
	"lazyfree-lazy-expire":        liveWord,
	"lazyfree-lazy-server-del":    liveWord,
	"lazyfree-lazy-user-del":      liveWord,
	"lazyfree-lazy-user-flush":    liveWord,
	"active-expire-effort":        liveInteger,
	"timeout":                     liveInteger,
	"tcp-keepalive":               liveInteger,
	"loglevel":                    liveWord,
	"slowlog-log-slower-than":     liveInteger,
	"slowlog-max-len":             liveInteger,
	"latency-monitor-threshold":   liveInteger,
	"hz":                          liveInteger,
	"repl-backlog-size":           liveBytes,
	"repl-timeout":                liveInteger,
	"repl-diskless-sync-delay":    liveInteger,
	"client-query-buffer-limit":   liveBytes,
	"proto-max-bulk-len":          liveBytes,
	"hash-max-listpack-entries":   liveInteger,
	"hash-max-listpack-value":     liveInteger,
	"list-max-listpack-size":      liveInteger,
	"set-max-intset-entries":      liveInteger,
	"zset-max-listpack-entries":   liveInteger,
	"zset-max-listpack-value":     liveInteger,
	"min-replicas-to-write":       liveInteger,
	"min-replicas-max-lag":        liveInteger,
}

// LiveSettingNames are the directives applied without a restart, sorted.
func LiveSettingNames() []string { return slices.Sorted(maps.Keys(liveSettings)) }

// isLive says whether key is applied with CONFIG SET. A key spelled in
// another case is not: valkey.conf would hold both spellings.
func isLive(key string) bool {
	_, ok := liveSettings[key]
	return ok
}

// SettingsChange splits the difference between the settings a node records
// and the ones it should: the live keys added or changed, which CONFIG SET
// applies in place, and the first key (in order) that needs a restart. A
// live key removed needs one too: its value would fall back to Valkey's
// default, which the operator does not know for every release.
func SettingsChange(existing, desired map[string]string) (live []string, restart string) {
	keys := slices.Sorted(maps.Keys(existing))
	keys = append(keys, slices.Collect(maps.Keys(desired))...)
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		va, inA := existing[k]
		vb, inB := desired[k]
		switch {
		case inA == inB && va == vb:
		case isLive(k) && inB:
			live = append(live, k)
		case restart == "":
			restart = k
		}
	}
	return live, restart
}

// LiveKeys are the live directives among a node's settings, sorted: what
// the operator reads back from the node (CONFIG GET) to find drift.
func LiveKeys(settings map[string]string) []string {
	var out []string
	for k := range settings {
		if isLive(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// LiveDrift are the live directives of rendered whose value the node runs
// (running, as CONFIG GET answered) differs from, sorted. A directive the
// node did not answer for counts as different: nothing shows it runs the
// rendered value.
func LiveDrift(rendered, running map[string]string) []string {
	var out []string
	for _, k := range LiveKeys(rendered) {
		got, ok := running[k]
		if !ok || !sameLiveValue(liveSettings[k], rendered[k], got) {
			out = append(out, k)
		}
	}
	return out
}

// sameLiveValue compares a rendered value with the one CONFIG GET returned.
// A value that does not parse is compared as written.
func sameLiveValue(kind liveKind, rendered, running string) bool {
	switch kind {
	case liveBytes:
		a, errA := valkey.ParseMemory(rendered)
		b, errB := valkey.ParseMemory(running)
		if errA == nil && errB == nil {
			return a == b
		}
	case liveInteger:
		a, errA := strconv.ParseInt(strings.TrimSpace(rendered), 10, 64)
		b, errB := strconv.ParseInt(strings.TrimSpace(running), 10, 64)
		if errA == nil && errB == nil {
			return a == b
		}
	}
	return strings.EqualFold(strings.TrimSpace(rendered), strings.TrimSpace(running))
}

// SettingsDigest identifies a settings map, to remember which edit a node
// refused without storing its values.
func SettingsDigest(settings map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(h, "%q=%q\n", k, settings[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
