package render

import (
	"slices"
	"testing"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestSettingsChange(t *testing.T) {
	base := map[string]string{"maxmemory": "100mb", "maxmemory-policy": "noeviction", "port": "6379"}
	with := func(edit func(m map[string]string)) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		edit(m)
		return m
	}
	tests := []struct {
		name        string
		desired     map[string]string
		wantLive    []string
		wantRestart string
	}{
		{name: "same", desired: with(func(map[string]string) {})},
		{name: "live values changed", desired: with(func(m map[string]string) { m["maxmemory"] = "200mb"; m["maxmemory-policy"] = "allkeys-lru" }),
			wantLive: []string{"maxmemory", "maxmemory-policy"}},
		{name: "live key added", desired: with(func(m map[string]string) { m["hz"] = "20" }), wantLive: []string{"hz"}},
		{name: "live key removed needs a restart", desired: with(func(m map[string]string) { delete(m, "maxmemory-policy") }),
			wantRestart: "maxmemory-policy"},
		{name: "restart key changed", desired: with(func(m map[string]string) { m["port"] = "6380" }), wantRestart: "port"},
		{name: "restart key added", desired: with(func(m map[string]string) { m["databases"] = "4" }), wantRestart: "databases"},
		{name: "a live key in another case is not live", desired: with(func(m map[string]string) { m["MAXMEMORY-POLICY"] = "allkeys-lru" }),
			wantRestart: "MAXMEMORY-POLICY"},
		{name: "both: the first restart key and every live one", desired: with(func(m map[string]string) {
			m["maxmemory"] = "1gb"
			m["databases"] = "4"
			m["appendonly"] = "yes"
		}), wantLive: []string{"maxmemory"}, wantRestart: "appendonly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, restart := SettingsChange(base, tt.desired)
			if !slices.Equal(live, tt.wantLive) || restart != tt.wantRestart {
				t.Fatalf("SettingsChange = %q, %q; want %q, %q", live, restart, tt.wantLive, tt.wantRestart)
			}
		})
	}
}

func TestLiveDrift(t *testing.T) {
	rendered := map[string]string{
		"maxmemory":               "100mb",
		"maxmemory-policy":        "allkeys-LRU",
		"slowlog-log-slower-than": "-1",
		"port":                    "6379",
	}
	same := map[string]string{
		"maxmemory":               "104857600",
		"maxmemory-policy":        "allkeys-lru",
		"slowlog-log-slower-than": "-1",
	}
	tests := []struct {
		name    string
		running func(m map[string]string)
		want    []string
	}{
		{name: "units and case as CONFIG GET answers", running: func(map[string]string) {}},
		{name: "policy changed by hand", running: func(m map[string]string) { m["maxmemory-policy"] = "noeviction" },
			want: []string{"maxmemory-policy"}},
		{name: "bytes changed", running: func(m map[string]string) { m["maxmemory"] = "100000000" }, want: []string{"maxmemory"}},
		{name: "a number changed", running: func(m map[string]string) { m["slowlog-log-slower-than"] = "10000" },
			want: []string{"slowlog-log-slower-than"}},
		{name: "unanswered counts as drift", running: func(m map[string]string) { delete(m, "maxmemory") }, want: []string{"maxmemory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := map[string]string{}
			for k, v := range same {
				running[k] = v
			}
			tt.running(running)
			if got := LiveDrift(rendered, running); !slices.Equal(got, tt.want) {
				t.Fatalf("LiveDrift = %q, want %q", got, tt.want)
			}
		})
	}
}

// A forced directive is the operator's, never the user's: it has no place
// among the settings a user edit applies in place.
func TestNoForcedSettingIsLive(t *testing.T) {
	for _, table := range [][]setting{forcedAlways, forcedTLS, forcedPersistence(&v1alpha1.NodePersistence{})} {
		for _, s := range table {
			if isLive(s.key) {
				t.Errorf("forced directive %q is in liveSettings", s.key)
			}
		}
	}
	if isLive(keyShutdownOnSigterm) || isLive(keyAnnounceHostname) {
		t.Errorf("a per-node forced directive is in liveSettings")
	}
}
