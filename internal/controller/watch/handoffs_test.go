package watch

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestHandedOverPassesOnlyOthersWrites(t *testing.T) {
	base := func() *valkeyv1.ValkeyCluster {
		return &valkeyv1.ValkeyCluster{Status: valkeyv1.ValkeyClusterStatus{
			State:       valkeyv1.StateActive,
			Autoscaling: &valkeyv1.AutoscalingStatus{DesiredShards: 3, HoldReason: "WithinThresholds"},
			Restore:     &valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreRunning, Message: "shard 1 of 2"},
		}}
	}
	for _, tc := range []struct {
		name string
		// before edits the old object, edit the new one.
		before, edit func(*valkeyv1.ValkeyCluster)
		want         bool
	}{
		{"the autoscaler's new target", nil, func(vc *valkeyv1.ValkeyCluster) { vc.Status.Autoscaling.DesiredShards = 4 }, true},
		{"autoscaling status appears with a target", func(vc *valkeyv1.ValkeyCluster) { vc.Status.Autoscaling = nil }, func(*valkeyv1.ValkeyCluster) {}, true},
		{"the restore completes", nil, func(vc *valkeyv1.ValkeyCluster) { vc.Status.Restore.Phase = valkeyv1.RestoreCompleted }, true},
		{"the restore's progress", nil, func(vc *valkeyv1.ValkeyCluster) { vc.Status.Restore.Message = "shard 2 of 2" }, true},
		// Written on every sample: waking on it would cost a pass a sample.
		{"the autoscaler's hold message", nil, func(vc *valkeyv1.ValkeyCluster) { vc.Status.Autoscaling.HoldMessage = "below" }, false},
		// The cluster controller's own writes.
		{"the state", nil, func(vc *valkeyv1.ValkeyCluster) { vc.Status.State = valkeyv1.StateCreating }, false},
		{"a condition", nil, func(vc *valkeyv1.ValkeyCluster) {
			vc.Status.Conditions = []metav1.Condition{{Type: valkeyv1.CondReady, Status: metav1.ConditionFalse}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			if tc.before != nil {
				tc.before(old)
			}
			tc.edit(cur)
			if got := HandedOver().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("HandedOver passes %v, want %v", got, tc.want)
			}
		})
	}
	if HandedOver().Create(event.CreateEvent{Object: base()}) {
		t.Error("HandedOver passes a creation: the controller's other predicates decide those")
	}
}
