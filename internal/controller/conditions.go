package controller

import "github.com/gomomento/valkey-operator/internal/topology"

// Condition types on ValkeyCluster status: the one place that names them.
const (
	// CondReady is True when the cluster is Active and serving every slot.
	CondReady = "Ready"
	// CondProgressing is True while bootstrap, a roll, a scale or recovery is under way.
	CondProgressing = "Progressing"
	// CondDegraded is True when a shard lacks a healthy primary or replicas.
	CondDegraded = "Degraded"
	// CondTLSValid reports the TLS Secret validation (TLS clusters only).
	CondTLSValid = "TLSValid"
	// CondCertificateExpiringSoon is True within 30 days of the leaf's notAfter.
	CondCertificateExpiringSoon = "CertificateExpiringSoon"
	// CondReferencesResolved reports the config chain, image and roles.
	CondReferencesResolved = "ReferencesResolved"
	// CondDefaultUserOpen warns that the default user is open (no ACL bindings).
	CondDefaultUserOpen = "DefaultUserOpen"
	// CondCertificatesServed reports whether every node serves the Secret's certificate.
	CondCertificatesServed = "CertificatesServed"
	// CondACLApplied reports whether every node loaded the rendered ACL file.
	CondACLApplied = "ACLApplied"
	// CondPaused is True while the paused annotation holds the planner's
	// actions.
	CondPaused = "Paused"
	// CondAutoscaling is present while spec.autoscaling is set: True when
	// every configured trigger can be measured, False naming those that
	// cannot.
	CondAutoscaling = "Autoscaling"
)

// Reasons of the Autoscaling condition and the autoscaler's Events.
const (
	// ReasonAutoscalingActive: the shard count follows
	// status.autoscaling.desiredShards; spec.shards is ignored.
	ReasonAutoscalingActive = "AutoscalingActive"
	// ReasonTriggerUnusable: a percentage trigger has no denominator on
	// some node (no CPU limit; neither maxmemory nor a memory limit).
	ReasonTriggerUnusable = "TriggerUnusable"
	// ReasonScaleOut and ReasonScaleIn are the Events of a decision.
	ReasonScaleOut = "ScaleOut"
	ReasonScaleIn  = "ScaleIn"
	// ReasonScaleInRefused: the thresholds allowed a scale-in but the
	// remaining primaries would lack memory for the keys they would receive.
	ReasonScaleInRefused = "ScaleInRefused"
	// ReasonSpecShardsIgnored: spec.shards changed (kubectl scale) while
	// spec.autoscaling is set.
	ReasonSpecShardsIgnored = "SpecShardsIgnored"
)

// Reasons used with the conditions above and as Event reasons.
const (
	ReasonFormed             = "ClusterFormed"
	ReasonBootstrapping      = "Bootstrapping"
	ReasonInvalid            = "Invalid"
	ReasonConverged          = "Converged"
	ReasonWaiting            = "Waiting"
	ReasonHealthy            = "Healthy"
	ReasonValid              = "Valid"
	ReasonResolved           = "Resolved"
	ReasonNotExpiring        = "NotExpiring"
	ReasonNoBindings         = "NoBindings"
	ReasonBindingsPresent    = "BindingsPresent"
	ReasonUnreachable        = "NodeUnreachable"
	ReasonActionFailed       = "ActionFailed"
	ReasonRotationComplete   = "RotationComplete"
	ReasonRotationInProgress = "RotationInProgress"
	ReasonReloadFailed       = "ReloadFailed"
	// ReasonStateChanged is the Event reason of a status.state transition.
	ReasonStateChanged = "StateChanged"
	// Reasons about the operator's own credentials ({cluster}-operator-auth):
	// deleted and kept for a restore, restored, or gone past the finalizer.
	ReasonCredentialsDeleted  = "CredentialsDeleted"
	ReasonCredentialsRestored = "CredentialsRestored"
	ReasonCredentialsLost     = "CredentialsLost"
	// ReasonMeteringReleased is the Event of a released metering record.
	ReasonMeteringReleased = "Released"
	// ReasonReleaseRequired: a metering record was deleted without the
	// release annotation; the deletion waits for it.
	ReasonReleaseRequired = "ReleaseRequired"
	// Reasons of the pods' synced readiness gate (valkeyv1.ConditionSynced).
	ReasonSynced    = "Synced"
	ReasonSyncing   = "InitialSync"
	ReasonLinkDown  = "ReplicationLinkDown"
	ReasonNoPrimary = "NoPrimary"
	// ReasonPaused and ReasonResumed: the paused annotation was set or
	// removed (Paused condition and Events).
	ReasonPaused  = "Paused"
	ReasonResumed = "Resumed"
	// ReasonNotPaused: the Paused condition when the annotation is absent.
	ReasonNotPaused = "NotPaused"
)

// Reasons of the Progressing and Degraded conditions when the cluster waits
// on something outside the operator; otherwise those carry the action kind.
const (
	ReasonPodUnschedulable     = "PodUnschedulable"
	ReasonPodPending           = "PodPending"
	ReasonAwaitingAutoFailover = "AwaitingAutoFailover"
	ReasonFailoverInProgress   = "FailoverInProgress"
	ReasonReplicaSyncing       = "ReplicaSyncing"
	ReasonPodStopping          = "PodStopping"
	ReasonPrimaryStalled       = "PrimaryStalled"
	ReasonHeldForTLS           = "HeldForTLS"
	ReasonInsufficientMemory   = "InsufficientMemory"
)

// waitReasons names the planner's waits a reader can act on or should
// expect to clear by itself.
var waitReasons = map[string]string{
	topology.ReasonPodUnschedulable:         ReasonPodUnschedulable,
	topology.ReasonUnschedulable:            ReasonPodUnschedulable,
	topology.ReasonPodPending:               ReasonPodPending,
	topology.ReasonNodeSilent:               ReasonUnreachable,
	topology.ReasonWaitAutoFailover:         ReasonAwaitingAutoFailover,
	topology.ReasonFailoverInFlight:         ReasonFailoverInProgress,
	topology.ReasonReplicaSyncing:           ReasonReplicaSyncing,
	topology.ReasonPodStopping:              ReasonPodStopping,
	topology.ReasonPrimaryFlaggedButRunning: ReasonPrimaryStalled,
	heldForTLS:                              ReasonHeldForTLS,
	topology.ReasonScaleInNoHeadroom:        ReasonInsufficientMemory,
	reasonBackoffWait:                       ReasonReplacementBackoff,
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

// Reasons of the CertificatesServed condition beyond those above.
const (
	// ReasonServingCurrent: every node serves the Secret's certificate.
	ReasonServingCurrent = "ServingCurrent"
)

// Reasons of the ACLApplied condition beyond those above.
const (
	// ReasonACLCurrent: every node's ACL LIST matches the rendered file.
	ReasonACLCurrent = "ACLCurrent"
	// ReasonACLRejected: a node's ACL LOAD failed; it keeps its previous rules.
	ReasonACLRejected = "ACLRejected"
	// ReasonACLPending: a node loaded its mounted file, which is not the
	// rendered one yet.
	ReasonACLPending = "ACLPending"
	// ReasonACLLoadUnsafe: a replica runs a Valkey release that crashes on
	// ACL LOAD and refused the per-user update (its file lacks the grants).
	ReasonACLLoadUnsafe = "ACLLoadUnsafe"
)
