package render

import (
	"testing"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestOutdated(t *testing.T) {
	base := func() v1alpha1.ValkeyNodeSpec {
		return v1alpha1.ValkeyNodeSpec{
			ClusterName:    "c",
			Image:          "valkey/valkey:8.0.1",
			CPU:            "1",
			Memory:         "1Gi",
			ValkeySettings: map[string]string{"maxmemory": "800mb", "port": "6379"},
			ShardIndex:     0,
			Placement: &v1alpha1.Placement{
				Zones:        []string{"a", "b"},
				ZoneSpread:   v1alpha1.ZoneSpreadBestEffort,
				NodeSelector: map[string]string{"pool": "valkey"},
			},
			Lifecycle: v1alpha1.LifecycleActive,
		}
	}
	const exporterV1, exporterV2 = "oliver006/redis_exporter:v1.45.0", "oliver006/redis_exporter:v1.80.0"
	tests := []struct {
		name     string
		existing func(s *v1alpha1.ValkeyNodeSpec) // base() unless set
		change   func(s *v1alpha1.ValkeyNodeSpec)
		want     string // empty: not outdated
	}{
		{name: "same", change: func(*v1alpha1.ValkeyNodeSpec) {}},
		{name: "image", change: func(s *v1alpha1.ValkeyNodeSpec) { s.Image = "valkey/valkey:9.0.1" },
			want: `image changed from "valkey/valkey:8.0.1" to "valkey/valkey:9.0.1"`},
		{name: "cpu", change: func(s *v1alpha1.ValkeyNodeSpec) { s.CPU = "2" }, want: `cpu changed from "1" to "2"`},
		{name: "cpu removed", change: func(s *v1alpha1.ValkeyNodeSpec) { s.CPU = "" }, want: `cpu changed from "1" to ""`},
		{name: "memory", change: func(s *v1alpha1.ValkeyNodeSpec) { s.Memory = "2Gi" }, want: `memory changed from "1Gi" to "2Gi"`},
		{name: "live setting value is applied in place", change: func(s *v1alpha1.ValkeyNodeSpec) { s.ValkeySettings["maxmemory"] = "900mb" }},
		{name: "live setting added is applied in place", change: func(s *v1alpha1.ValkeyNodeSpec) { s.ValkeySettings["loglevel"] = "warning" }},
		{name: "restart setting value", change: func(s *v1alpha1.ValkeyNodeSpec) { s.ValkeySettings["port"] = "6380" },
			want: `valkey setting "port" changed`},
		{name: "restart setting added", change: func(s *v1alpha1.ValkeyNodeSpec) { s.ValkeySettings["databases"] = "4" },
			want: `valkey setting "databases" changed`},
		{name: "restart setting next to a live one", change: func(s *v1alpha1.ValkeyNodeSpec) {
			s.ValkeySettings["maxmemory"] = "900mb"
			s.ValkeySettings["databases"] = "4"
		}, want: `valkey setting "databases" changed`},
		{name: "setting removed", change: func(s *v1alpha1.ValkeyNodeSpec) { delete(s.ValkeySettings, "maxmemory") },
			want: `valkey setting "maxmemory" changed`},
		{name: "zones reordered are the same set", change: func(s *v1alpha1.ValkeyNodeSpec) { s.Placement.Zones = []string{"b", "a", "a"} }},
		{name: "zone added", change: func(s *v1alpha1.ValkeyNodeSpec) { s.Placement.Zones = []string{"a", "b", "c"} },
			want: `zones changed from ["a" "b"] to ["a" "b" "c"]`},
		{name: "node selector", change: func(s *v1alpha1.ValkeyNodeSpec) { s.Placement.NodeSelector = nil },
			want: `nodeSelector "pool" changed`},
		{name: "placement removed", change: func(s *v1alpha1.ValkeyNodeSpec) { s.Placement = nil },
			want: `zones changed from ["a" "b"] to []`},
		{name: "zoneSpread only affects new pods", change: func(s *v1alpha1.ValkeyNodeSpec) { s.Placement.ZoneSpread = v1alpha1.ZoneSpreadRequired }},
		{name: "lifecycle is progress", change: func(s *v1alpha1.ValkeyNodeSpec) { s.Lifecycle = v1alpha1.LifecycleJoining }},
		{name: "shard index is not a setting", change: func(s *v1alpha1.ValkeyNodeSpec) { s.ShardIndex = 3 }},
		{name: "exporter enabled", change: func(s *v1alpha1.ValkeyNodeSpec) { s.ExporterImage = exporterV2 },
			want: "metrics exporter enabled"},
		{name: "exporter disabled", existing: func(s *v1alpha1.ValkeyNodeSpec) { s.ExporterImage = exporterV1 },
			change: func(*v1alpha1.ValkeyNodeSpec) {}, want: "metrics exporter disabled"},
		{name: "a new exporter image only reaches new pods", existing: func(s *v1alpha1.ValkeyNodeSpec) { s.ExporterImage = exporterV1 },
			change: func(s *v1alpha1.ValkeyNodeSpec) { s.ExporterImage = exporterV2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing, desired := base(), base()
			if tt.existing != nil {
				tt.existing(&existing)
			}
			tt.change(&desired)
			got, why := Outdated(existing, desired)
			if got != (tt.want != "") || why != tt.want {
				t.Fatalf("Outdated = %v %q, want %q", got, why, tt.want)
			}
		})
	}
}

func TestOutdatedTreatsMissingAndEmptyAlike(t *testing.T) {
	a := v1alpha1.ValkeyNodeSpec{Image: "i"}
	b := v1alpha1.ValkeyNodeSpec{Image: "i", ValkeySettings: map[string]string{}, Placement: &v1alpha1.Placement{Zones: []string{}, NodeSelector: map[string]string{}}}
	if got, why := Outdated(a, b); got {
		t.Fatalf("outdated: %s", why)
	}
}
