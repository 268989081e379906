package controller

import (
	"slices"
	"testing"
)

// Every registered collector is one metric, and each is named, including
// vectors that have no series yet.
func TestMetricNames(t *testing.T) {
	got := MetricNames()
	if len(got) != len(registered) {
		t.Fatalf("%d names %q for %d collectors", len(got), got, len(registered))
	}
	for _, want := range []string{"valkey_cluster_state", "valkey_acl_loads_total", "valkey_tls_reloads_total", "valkey_cluster_autoscaling_decisions_total"} {
		if !slices.Contains(got, want) {
			t.Errorf("MetricNames() = %q, missing %s", got, want)
		}
	}
}
