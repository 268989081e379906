package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// restorePending: spec.restore has not filled the cluster yet.
func restorePending(vc *valkeyv1.ValkeyCluster) bool {
	return vc.Spec.Restore != nil && (vc.Status.Restore == nil || vc.Status.Restore.Phase != valkeyv1.RestoreCompleted)
}

// applyRestoreGate keeps a cluster that spec.restore has not filled out of
// Active and Ready: clients and backups must not take an empty or half
// filled cluster for the backup's data. Once the planner has nothing left
// to do, Ready=False with reason Restoring is what tells the restore
// controller to begin.
func applyRestoreGate(vc *valkeyv1.ValkeyCluster, a topology.Action) {
	if !restorePending(vc) {
		return
	}
	if vc.Status.State == valkeyv1.StateActive {
		vc.Status.State = valkeyv1.StateCreating
	}
	if !a.Done() {
		return
	}
	reason, msg := valkeyv1.ReasonRestoring, "formed; the restore is about to begin"
	if st := vc.Status.Restore; st != nil {
		if st.Phase == valkeyv1.RestoreFailed {
			reason = valkeyv1.ReasonRestoreFailed
		}
		if st.Message != "" {
			msg = st.Message
		}
	}
	clusterstatus.SetCondition(vc, valkeyv1.CondReady, metav1.ConditionFalse, reason, msg)
	clusterstatus.SetCondition(vc, valkeyv1.CondProgressing, clusterstatus.BoolStatus(reason == valkeyv1.ReasonRestoring), reason, msg)
}
