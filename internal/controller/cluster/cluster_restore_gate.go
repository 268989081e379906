package cluster

import (
	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// restorePending: spec.restore has not filled the cluster yet. While it
// has not, the status is gated (statusBuilder.restoreGate).
func restorePending(vc *valkeyv1.ValkeyCluster) bool {
	return vc.Spec.Restore != nil && (vc.Status.Restore == nil || vc.Status.Restore.Phase != valkeyv1.RestoreCompleted)
}
