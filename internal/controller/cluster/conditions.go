package cluster

import (
	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// causeReasons names the waits a reader can act on or should expect to
// clear by itself. It is keyed on the planner's typed cause, never on its
// wording, so rewording a wait leaves the condition reason alone.
var causeReasons = map[topology.WaitCause]string{
	topology.CausePodUnschedulable:   valkeyv1.ReasonPodUnschedulable,
	topology.CausePodPending:         valkeyv1.ReasonPodPending,
	topology.CauseNodeSilent:         valkeyv1.ReasonUnreachable,
	topology.CauseAutoFailover:       valkeyv1.ReasonAwaitingAutoFailover,
	topology.CauseFailoverInFlight:   valkeyv1.ReasonFailoverInProgress,
	topology.CauseReplicaSyncing:     valkeyv1.ReasonReplicaSyncing,
	topology.CausePodStopping:        valkeyv1.ReasonPodStopping,
	topology.CausePrimaryStalled:     valkeyv1.ReasonPrimaryStalled,
	topology.CauseHeldForTLS:         valkeyv1.ReasonHeldForTLS,
	topology.CauseRolloutWaiting:     valkeyv1.ReasonRolloutWaiting,
	topology.CauseScaleInNoHeadroom:  valkeyv1.ReasonInsufficientMemory,
	topology.CauseReplacementBackoff: valkeyv1.ReasonReplacementBackoff,
	topology.CausePodMissing:         valkeyv1.ReasonPodMissing,
	topology.CauseHeldForVersion:     valkeyv1.ReasonHeldForVersion,
	topology.CauseNodesUnseen:        valkeyv1.ReasonNodesUnseen,
	topology.CausePaused:             valkeyv1.ReasonPaused,
}

// actionReason is the condition reason for a planned action: what blocks a
// Wait when it is known, the action kind otherwise.
func actionReason(a topology.Action) string {
	if a.Kind == topology.KindWait {
		if r, ok := causeReasons[a.Cause]; ok {
			return r
		}
	}
	return string(a.Kind)
}
