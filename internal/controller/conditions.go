package controller

import (
	"github.com/gomomento/valkey-operator/internal/topology"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// waitReasons names the planner's waits a reader can act on or should
// expect to clear by itself.
var waitReasons = map[string]string{
	topology.ReasonPodUnschedulable:         valkeyv1.ReasonPodUnschedulable,
	topology.ReasonUnschedulable:            valkeyv1.ReasonPodUnschedulable,
	topology.ReasonPodPending:               valkeyv1.ReasonPodPending,
	topology.ReasonNodeSilent:               valkeyv1.ReasonUnreachable,
	topology.ReasonWaitAutoFailover:         valkeyv1.ReasonAwaitingAutoFailover,
	topology.ReasonFailoverInFlight:         valkeyv1.ReasonFailoverInProgress,
	topology.ReasonReplicaSyncing:           valkeyv1.ReasonReplicaSyncing,
	topology.ReasonPodStopping:              valkeyv1.ReasonPodStopping,
	topology.ReasonPrimaryFlaggedButRunning: valkeyv1.ReasonPrimaryStalled,
	heldForTLS:                              valkeyv1.ReasonHeldForTLS,
	topology.ReasonScaleInNoHeadroom:        valkeyv1.ReasonInsufficientMemory,
	reasonBackoffWait:                       valkeyv1.ReasonReplacementBackoff,
}

// actionReason is the condition reason for a planned action: what blocks a
// Wait when it is known, the action kind otherwise.
func actionReason(a topology.Action) string {
	if a.Kind == topology.KindWait {
		if r, ok := waitReasons[a.Reason]; ok {
			return r
		}
	}
	return string(a.Kind)
}
