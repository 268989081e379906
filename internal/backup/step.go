package backup

import (
	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Action is what the backup controller does next.
type Action int

const (
	// Nothing: the backup is final.
	Nothing Action = iota
	// Wait: the cluster is not Active yet; look again later.
	Wait
	// Fail: the backup cannot go on; Step.Reason and Step.Message say why.
	Fail
	// Start: check the destination, then copy every shard.
	Start
)

// Observed is what the controller read before deciding.
type Observed struct {
	Phase valkeyv1.BackupPhase
	// ClusterFound and ClusterState are the named cluster's.
	ClusterFound bool
	ClusterState valkeyv1.ClusterState
	// Cluster is spec.cluster, for messages.
	Cluster string
}

// Step is the decision and, for Wait and Fail, the condition it reports.
type Step struct {
	Action  Action
	Reason  string
	Message string
}

// Next decides a backup's next step. A backup found Running was being
// copied by an operator that stopped: its streams died with it, and
// starting over would write to the same objects, so it fails and the user
// creates another.
func Next(o Observed) Step {
	switch o.Phase {
	case valkeyv1.BackupCompleted, valkeyv1.BackupFailed:
		return Step{Action: Nothing}
	case valkeyv1.BackupRunning:
		return Step{Action: Fail, Reason: valkeyv1.ReasonBackupSnapshotFailed,
			Message: "the operator restarted while the backup was running; create another ValkeyBackup"}
	}
	if !o.ClusterFound {
		return Step{Action: Fail, Reason: valkeyv1.ReasonBackupClusterNotFound,
			Message: "ValkeyCluster " + o.Cluster + " does not exist in this namespace"}
	}
	if o.ClusterState != valkeyv1.StateActive {
		state := string(o.ClusterState)
		if state == "" {
			state = "not yet reported"
		}
		return Step{Action: Wait, Reason: valkeyv1.ReasonBackupWaiting,
			Message: "waiting for ValkeyCluster " + o.Cluster + " to be Active (state: " + state + ")"}
	}
	return Step{Action: Start}
}
