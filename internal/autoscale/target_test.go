package autoscale

import (
	"testing"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestShardTarget(t *testing.T) {
	a := &valkeyv1.Autoscaling{MinShards: 2, MaxShards: 4}
	tests := []struct {
		name    string
		spec    int32
		auto    *valkeyv1.Autoscaling
		desired int32
		want    int32
	}{
		{"no autoscaling", 3, nil, 7, 3},
		{"desired shards", 3, a, 4, 4},
		{"desired above a lowered maxShards", 3, a, 6, 4},
		{"desired below a raised minShards", 3, a, 1, 2},
		{"before the first decision: spec.shards bounded", 1, a, 0, 2},
		{"before the first decision: spec.shards above maxShards", 9, a, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vc := &valkeyv1.ValkeyCluster{}
			vc.Spec.Shards, vc.Spec.Autoscaling = tt.spec, tt.auto
			if tt.desired > 0 {
				vc.Status.Autoscaling = &valkeyv1.AutoscalingStatus{DesiredShards: tt.desired}
			}
			if got := ShardTarget(vc); got != tt.want {
				t.Fatalf("ShardTarget = %d, want %d", got, tt.want)
			}
		})
	}
}
