package topology

import "strconv"

// WaitCause says what a Wait is held up by when it is something a reader
// can act on, or should expect to clear by itself. The reconciler turns it
// into a condition reason, so rewording a Wait's Reason never changes what
// status shows. The other waits are steps of a procedure that pass by
// themselves and carry CauseNone.
type WaitCause int

const (
	// CauseNone: a step of a procedure; not a named wait.
	CauseNone WaitCause = iota
	// CausePodUnschedulable: the scheduler cannot place a node's pod.
	CausePodUnschedulable
	// CausePodPending: a node's pod exists, or is about to, but does not
	// run yet.
	CausePodPending
	// CauseNodeSilent: a node's pod runs but the node does not answer.
	CauseNodeSilent
	// CausePodStopping: a pod is being deleted and its process has not
	// exited yet.
	CausePodStopping
	// CauseAutoFailover: a primary is down and Valkey is expected to
	// promote its replica.
	CauseAutoFailover
	// CauseFailoverInFlight: a requested CLUSTER FAILOVER has not flipped
	// the roles yet.
	CauseFailoverInFlight
	// CauseReplicaSyncing: a replica in its place is still loading its
	// primary's data.
	CauseReplicaSyncing
	// CausePrimaryStalled: peers flag a primary FAIL while its process
	// runs and answers.
	CausePrimaryStalled
	// CauseScaleInNoHeadroom: a scale-in would leave the remaining
	// primaries too full.
	CauseScaleInNoHeadroom
	// CauseHeldForTLS: a change waits while the cluster's TLS Secret is
	// invalid (Input.HoldForTLS).
	CauseHeldForTLS
	// CauseReplacementBackoff: node creations wait after repeated
	// container failures (Input.Backoff).
	CauseReplacementBackoff
	// CausePodMissing: a slot owner's pod is missing from the operator's
	// view while its peers still reach its process.
	CausePodMissing
	// CauseRolloutWaiting: the roll waits for its turn in a fleet rollout
	// (Input.HoldRoll).
	CauseRolloutWaiting
	// CauseHeldForVersion: node creations and the roll wait while the
	// Valkey version check holds them (Input.HoldForVersion).
	CauseHeldForVersion
	// CauseNodesUnseen: the observation lacks nodes an earlier wave
	// created (Input.Unseen); it clears once the cache shows them.
	CauseNodesUnseen
	// CausePaused: the paused annotation holds every action
	// (Input.Paused); it clears when the annotation goes.
	CausePaused

	causeEnd
)

var causeNames = [causeEnd]string{
	CauseNone:               "None",
	CausePodUnschedulable:   "PodUnschedulable",
	CausePodPending:         "PodPending",
	CauseNodeSilent:         "NodeSilent",
	CausePodStopping:        "PodStopping",
	CauseAutoFailover:       "AutoFailover",
	CauseFailoverInFlight:   "FailoverInFlight",
	CauseReplicaSyncing:     "ReplicaSyncing",
	CausePrimaryStalled:     "PrimaryStalled",
	CauseScaleInNoHeadroom:  "ScaleInNoHeadroom",
	CauseHeldForTLS:         "HeldForTLS",
	CauseReplacementBackoff: "ReplacementBackoff",
	CausePodMissing:         "PodMissing",
	CauseRolloutWaiting:     "RolloutWaiting",
	CauseHeldForVersion:     "HeldForVersion",
	CauseNodesUnseen:        "NodesUnseen",
	CausePaused:             "Paused",
}

// WaitCauses lists every cause a Wait can carry, CauseNone aside, so a
// mapping of causes can be checked for completeness.
func WaitCauses() []WaitCause {
	out := make([]WaitCause, 0, causeEnd-1)
	for c := CauseNone + 1; c < causeEnd; c++ {
		out = append(out, c)
	}
	return out
}

func (c WaitCause) String() string {
	if c < 0 || c >= causeEnd || causeNames[c] == "" {
		return "WaitCause(" + strconv.Itoa(int(c)) + ")"
	}
	return causeNames[c]
}
