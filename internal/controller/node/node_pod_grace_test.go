package node

import (
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestPodDeleteOptions(t *testing.T) {
	tests := []struct {
		lifecycle valkeyv1.NodeLifecycle
		grace     *int64 // nil: the pod's own grace period and preStop hold
	}{
		{valkeyv1.LifecycleLeaving, ptr.To[int64](0)},
		{valkeyv1.LifecycleActive, nil},
		{valkeyv1.LifecycleJoining, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.lifecycle), func(t *testing.T) {
			node := &valkeyv1.ValkeyNode{Spec: valkeyv1.ValkeyNodeSpec{Lifecycle: tt.lifecycle}}
			var opts client.DeleteOptions
			opts.ApplyOptions(podDeleteOptions(node))
			switch {
			case tt.grace == nil && opts.GracePeriodSeconds != nil:
				t.Fatalf("grace %d, want the pod's own", *opts.GracePeriodSeconds)
			case tt.grace != nil && (opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != *tt.grace):
				t.Fatalf("grace %v, want %d", opts.GracePeriodSeconds, *tt.grace)
			}
		})
	}
}
