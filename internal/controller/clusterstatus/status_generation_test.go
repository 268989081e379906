package clusterstatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A reconcile of generation 3 that fails must leave the status claiming
// generation 2, the last one acted on, on the status and every condition.
func TestSettleGeneration(t *testing.T) {
	for _, tt := range []struct {
		name      string
		succeeded bool
		want      int64
	}{
		{"success claims the spec", true, 3},
		{"failure keeps the last success", false, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			vc.Status.ObservedGeneration = 2
			SetCondition(vc, valkeyv1.CondReady, metav1.ConditionTrue, valkeyv1.ReasonHealthy, "old")
			vc.Generation = 3
			// Set during the pass of generation 3.
			SetCondition(vc, valkeyv1.CondProgressing, metav1.ConditionTrue, valkeyv1.ReasonActionFailed, "new")

			SettleGeneration(vc, tt.succeeded)

			if vc.Status.ObservedGeneration != tt.want {
				t.Errorf("status.observedGeneration = %d, want %d", vc.Status.ObservedGeneration, tt.want)
			}
			for _, c := range vc.Status.Conditions {
				if c.ObservedGeneration != tt.want {
					t.Errorf("condition %s observedGeneration = %d, want %d", c.Type, c.ObservedGeneration, tt.want)
				}
			}
		})
	}
}
