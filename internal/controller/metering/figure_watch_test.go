package metering

import (
	"testing"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestFigureChanged(t *testing.T) {
	node := func(memory, maxmemory string, peak int64) *valkeyv1.ValkeyNode {
		n := &valkeyv1.ValkeyNode{Spec: valkeyv1.ValkeyNodeSpec{Memory: memory, ValkeySettings: map[string]string{}}}
		if maxmemory != "" {
			n.Spec.ValkeySettings["maxmemory"] = maxmemory
		}
		if peak > 0 {
			n.Status.Utilisation = &valkeyv1.NodeUtilisation{PeakUsedMemoryBytes: peak}
		}
		return n
	}
	tests := []struct {
		name     string
		old, cur *valkeyv1.ValkeyNode
		want     bool
	}{
		{"container memory resized", node("1Gi", "", 0), node("2Gi", "", 0), true},
		{"maxmemory edited without container memory", node("", "200mb", 0), node("", "300mb", 0), true},
		{"a higher peak observed, billed by observation", node("", "", 2e8), node("", "", 3e8), true},
		{"a higher peak under the floor", node("", "", 1e7), node("", "", 2e7), false},
		{"a higher peak beside reserved memory", node("1Gi", "", 2e8), node("1Gi", "", 3e8), false},
		{"nothing billed changed", node("1Gi", "", 0), node("1Gi", "", 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := figureChanged(tt.old, tt.cur); got != tt.want {
				t.Fatalf("figureChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
