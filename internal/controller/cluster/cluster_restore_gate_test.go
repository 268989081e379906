package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// A cluster spec.restore has not filled is never Active or Ready; once
// formed it says Restoring (what starts the restore) or why the restore
// failed; a completed restore, or none, leaves the planner's verdict.
func TestRestoreGate(t *testing.T) {
	done := topology.Action{Kind: topology.KindDone, Tier: topology.TierSteady}
	busy := topology.Action{Kind: topology.KindCreateNode, Tier: topology.TierBootstrap, Reason: "creating node"}
	cases := []struct {
		name       string
		restore    *valkeyv1.ClusterRestore
		status     *valkeyv1.RestoreStatus
		lead       topology.Action
		wantState  valkeyv1.ClusterState
		wantReason string // of Ready; "" when the gate leaves it alone
	}{
		{name: "no restore", lead: done, wantState: valkeyv1.StateActive},
		{name: "formed, restore not begun", restore: &valkeyv1.ClusterRestore{BackupName: "b"}, lead: done,
			wantState: valkeyv1.StateCreating, wantReason: valkeyv1.ReasonRestoring},
		{name: "restore running", restore: &valkeyv1.ClusterRestore{BackupName: "b"}, lead: done,
			status:    &valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreRunning, Message: "loading shard 1 of 2"},
			wantState: valkeyv1.StateCreating, wantReason: valkeyv1.ReasonRestoring},
		{name: "restore failed", restore: &valkeyv1.ClusterRestore{BackupName: "b"}, lead: done,
			status:    &valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreFailed, Message: "corrupt"},
			wantState: valkeyv1.StateCreating, wantReason: valkeyv1.ReasonRestoreFailed},
		{name: "healing while restoring", restore: &valkeyv1.ClusterRestore{BackupName: "b"}, lead: busy,
			wantState: valkeyv1.StateCreating},
		{name: "restore completed", restore: &valkeyv1.ClusterRestore{BackupName: "b"}, lead: done,
			status: &valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreCompleted}, wantState: valkeyv1.StateActive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vc := &valkeyv1.ValkeyCluster{}
			vc.Spec.Restore, vc.Status.Restore = tc.restore, tc.status
			vc.Status.State = valkeyv1.StateActive
			clusterstatus.SetCondition(vc, valkeyv1.CondReady, "True", valkeyv1.ReasonFormed, "")
			b := statusBuilder{st: vc.Status}
			if restorePending(vc) {
				b.restoreGate(tc.lead)
			}
			vc.Status = b.st
			if vc.Status.State != tc.wantState {
				t.Errorf("state %s, want %s", vc.Status.State, tc.wantState)
			}
			ready := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondReady)
			switch {
			case tc.wantReason == "" && ready.Reason != valkeyv1.ReasonFormed:
				t.Errorf("Ready %s/%s, want it left alone", ready.Status, ready.Reason)
			case tc.wantReason != "" && (ready.Status != "False" || ready.Reason != tc.wantReason):
				t.Errorf("Ready %s/%s, want False/%s", ready.Status, ready.Reason, tc.wantReason)
			}
			if tc.status != nil && tc.status.Message != "" && tc.wantReason != "" && ready.Message != tc.status.Message {
				t.Errorf("Ready says %q, want the restore's %q", ready.Message, tc.status.Message)
			}
		})
	}
}
