package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestSyncedCondition(t *testing.T) {
	tests := []struct {
		name   string
		view   *topology.View
		known  bool
		status corev1.ConditionStatus
		reason string
	}{
		{name: "not asked this tick: the last verdict stands"},
		{name: "a primary holds its data", view: &topology.View{Role: topology.RolePrimary},
			known: true, status: corev1.ConditionTrue, reason: valkeyv1.ReasonSynced},
		{name: "a synced replica", view: &topology.View{Role: topology.RoleReplica, PrimaryID: "p", LinkUp: true, SyncDone: true},
			known: true, status: corev1.ConditionTrue, reason: valkeyv1.ReasonSynced},
		{name: "a replica loading its primary's data", view: &topology.View{Role: topology.RoleReplica, PrimaryID: "p", LinkUp: true},
			known: true, status: corev1.ConditionFalse, reason: valkeyv1.ReasonSyncing},
		{name: "a replica not connected yet, or whose link dropped", view: &topology.View{Role: topology.RoleReplica, PrimaryID: "p"},
			known: true, status: corev1.ConditionFalse, reason: valkeyv1.ReasonLinkDown},
		{name: "a replica following nobody", view: &topology.View{Role: topology.RoleReplica},
			known: true, status: corev1.ConditionFalse, reason: valkeyv1.ReasonNoPrimary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, known := syncedCondition(topology.Member{Name: "n", View: tt.view})
			if known != tt.known || c.Status != tt.status || c.Reason != tt.reason {
				t.Errorf("got known=%v %s %s, want known=%v %s %s", known, c.Status, c.Reason, tt.known, tt.status, tt.reason)
			}
			if known && (c.Type != "valkey.gomomento.com/synced" || c.Message == "") {
				t.Errorf("condition %+v: want the synced type and a message", c)
			}
		})
	}
}
