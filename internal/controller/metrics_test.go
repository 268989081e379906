package controller

import (
	"slices"
	"testing"
)

// Every registered collector is one metric, named with its labels,
// including vectors that have no series yet.
func TestMetricLabels(t *testing.T) {
	got := MetricLabels()
	if len(got) != len(registered) {
		t.Fatalf("%d metrics %v for %d collectors", len(got), got, len(registered))
	}
	for name, labels := range map[string][]string{
		"valkey_cluster_state":                             {"namespace", "cluster", "state"},
		"valkey_acl_loads_total":                           {"namespace", "cluster", "result"},
		"valkey_cluster_tls_certificate_not_after_seconds": {"namespace", "cluster"},
		"valkey_cluster_autoscaling_decisions_total":       {"namespace", "cluster", "direction"},
	} {
		if !slices.Equal(got[name], labels) {
			t.Errorf("%s has labels %q, want %q", name, got[name], labels)
		}
	}
}
