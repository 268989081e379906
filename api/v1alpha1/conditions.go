package v1alpha1

// Condition types and reasons on the status of every kind, and the reasons
// of the Events that go with them. They are API: clients and alerts match
// on them, so a value never changes once released. docs/troubleshooting.md
// explains each.
//
// Each reason is named once. Three families are named by the package that
// decides them, next to the messages they go with: the TLS Secret checks
// and ServedCertNotTrusted in internal/tlssecret (messages.go), the
// references that do not resolve in internal/resolve (errors.go), and
// status.autoscaling.holdReason in internal/autoscale (decide.go). Every
// other reason is here.

// Condition types on ValkeyCluster status.
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
	// CondContainersHealthy reports whether every node's container runs, or
	// is on its way to: a pull that fails, a process that exits or is
	// OOM-killed is otherwise only visible on a pod that the operator soon
	// replaces.
	CondContainersHealthy = "ContainersHealthy"
	// CondDataLost is True once a shard has been recreated empty: its
	// primary was lost with no replica to take over, so the keys of its
	// slots are gone. It is a record rather than a state: it stays True, its
	// message naming the last loss, so that a loss over a weekend is still
	// visible on Monday.
	CondDataLost = "DataLost"
	// CondMemoryHeadroom reports whether the memory limit holds maxmemory
	// plus what a full sync and Valkey itself take beyond it: a setting
	// that leaves too little is taken, not refused, and this is where it
	// shows.
	CondMemoryHeadroom = "MemoryHeadroom"
	// CondVolumeSize is present on a persistent cluster: True when every
	// node's claim has the capacity persistence.size asks for, False while
	// claims are being expanded or when the size cannot be applied in
	// place (a shrink, a StorageClass that does not allow expansion). A
	// size alone never rolls the cluster.
	CondVolumeSize = "VolumeSize"
	// CondConfigDrift is True while a node runs a live valkey setting
	// (one CONFIG SET changes) other than the rendered value, False when
	// every node was read and runs them all, Unknown while a node could
	// not be read.
	CondConfigDrift = "ConfigDrift"
	// CondPlacementApplied is True when the pods carry every placement
	// setting of the config (spec.pod) and the cluster as written, False
	// while two of them contradict each other: its message names each and
	// the one kept. See docs/placement.md.
	CondPlacementApplied = "PlacementApplied"
)

// Reasons of the VolumeSize condition.
const (
	// ReasonVolumesAtSize: every claim has at least persistence.size.
	ReasonVolumesAtSize = "VolumesAtSize"
	// ReasonVolumesExpanding: claims were asked for persistence.size and
	// some have not reached it yet.
	ReasonVolumesExpanding = "VolumesExpanding"
	// ReasonVolumeShrinkRefused: persistence.size is smaller than the
	// claims the nodes have; a volume cannot shrink, so they keep theirs.
	ReasonVolumeShrinkRefused = "VolumeShrinkRefused"
	// ReasonVolumeExpansionNotAllowed: the claims' StorageClass does not
	// allow expansion (or is gone); the claims keep their size.
	ReasonVolumeExpansionNotAllowed = "VolumeExpansionNotAllowed"
)

// Reasons of the ConfigDrift condition, of Progressing while live settings
// are applied, and of the Events of both.
const (
	// ReasonSettingsInSync: every running node runs the rendered live settings.
	ReasonSettingsInSync = "SettingsInSync"
	// ReasonSettingsDrifted: a node runs a live setting someone changed by
	// hand (CONFIG SET); the operator sets it back unless the cluster's
	// config-drift annotation says report.
	ReasonSettingsDrifted = "SettingsDrifted"
	// ReasonSettingsUnread: a running node could not be asked for its
	// settings; nothing is claimed about it.
	ReasonSettingsUnread = "SettingsUnread"
	// ReasonApplyingSettings: an edit of live settings is being applied
	// to the nodes in place; a node that did not take it yet is retried.
	ReasonApplyingSettings = "ApplyingSettings"
	// ReasonSettingsAppliedLive is the Event of nodes that took an edit of
	// live settings without a restart.
	ReasonSettingsAppliedLive = "SettingsAppliedLive"
	// ReasonDriftReverted is the Event of a drifted setting set back.
	ReasonDriftReverted = "DriftReverted"
	// ReasonSettingsRefused is the Warning Event of a node whose server
	// refused an edit of live settings: the node is replaced with them.
	ReasonSettingsRefused = "SettingsRefused"
)

// Reasons of the PlacementApplied condition.
const (
	// ReasonPlacementApplied: nothing contradicts.
	ReasonPlacementApplied = "PlacementApplied"
	// ReasonPlacementConflict: a cluster's nodeSelector gives a config's
	// key another value, or a config's spread constraint repeats the
	// operator's key and mode.
	ReasonPlacementConflict = "PlacementConflict"
)

// Reasons of the MemoryHeadroom condition.
const (
	// ReasonHeadroomSufficient: maxmemory (derived or set) fits the limit
	// with the headroom.
	ReasonHeadroomSufficient = "HeadroomSufficient"
	// ReasonMaxmemoryUnlimited: maxmemory 0 under a memory limit.
	ReasonMaxmemoryUnlimited = "MaxmemoryUnlimited"
	// ReasonHeadroomTooSmall: the set maxmemory, or the replica output
	// buffer limit, leaves less than the headroom.
	ReasonHeadroomTooSmall = "HeadroomTooSmall"
	// ReasonNoMemoryLimit: no config in the chain sets resources.memory.
	ReasonNoMemoryLimit = "NoMemoryLimit"
	// ReasonMemorySettingUnreadable: maxmemory or client-output-buffer-limit
	// is not a value Valkey reads.
	ReasonMemorySettingUnreadable = "MemorySettingUnreadable"
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
	ReasonFormed        = "ClusterFormed"
	ReasonBootstrapping = "Bootstrapping"
	// ReasonRestoring: the cluster is formed and spec.restore is filling
	// it; it is Ready only once every key is in (status.restore).
	ReasonRestoring = "Restoring"
	// ReasonRestoreFailed: spec.restore cannot complete (status.restore).
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonRestoreStarted and ReasonRestoreCompleted are the Events of a
	// restore's start and end.
	ReasonRestoreStarted   = "RestoreStarted"
	ReasonRestoreCompleted = "RestoreCompleted"
	ReasonInvalid          = "Invalid"
	ReasonConverged        = "Converged"
	// ReasonReferencesUnresolved: the cluster has the shape its last
	// resolvable spec asks for, but the current spec's references do not
	// resolve, so what it changes is not applied (see ReferencesResolved).
	ReasonReferencesUnresolved = "ReferencesUnresolved"
	ReasonWaiting              = "Waiting"
	ReasonHealthy              = "Healthy"
	ReasonValid                = "Valid"
	ReasonResolved             = "Resolved"
	ReasonNotExpiring          = "NotExpiring"
	ReasonNoBindings           = "NoBindings"
	ReasonBindingsPresent      = "BindingsPresent"
	ReasonUnreachable          = "NodeUnreachable"
	ReasonActionFailed         = "ActionFailed"
	ReasonRotationComplete     = "RotationComplete"
	ReasonRotationInProgress   = "RotationInProgress"
	ReasonReloadFailed         = "ReloadFailed"
	// ReasonStateChanged is the Event reason of a status.state transition.
	ReasonStateChanged = "StateChanged"
	// Reasons about the operator's own credentials ({cluster}-operator-auth):
	// deleted and kept for a restore, restored, or gone past the finalizer.
	ReasonCredentialsDeleted  = "CredentialsDeleted"
	ReasonCredentialsRestored = "CredentialsRestored"
	ReasonCredentialsLost     = "CredentialsLost"
	// Events of a rotation of the operator's and the replication user's
	// passwords (AnnotationRotateCredentials).
	ReasonCredentialsRotationStarted = "CredentialsRotationStarted"
	ReasonCredentialsSwitched        = "CredentialsSwitched"
	ReasonCredentialsRotated         = "CredentialsRotated"
	// ReasonMeteringReleased is the Event of a released metering record.
	ReasonMeteringReleased = "Released"
	// ReasonReleaseRequired: a metering record was deleted without the
	// release annotation; the deletion waits for it.
	ReasonReleaseRequired = "ReleaseRequired"
	// Reasons of the pods' synced readiness gate (ConditionSynced).
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
	// ReasonConfigRejected: the config resolved but its settings cannot be
	// rendered (a value the renderer refuses); the cluster keeps the
	// rendering its nodes run until it is fixed.
	ReasonConfigRejected = "ConfigRejected"
	// ReasonPodLabelsRestored (Event): a node's pod had lost the labels
	// the operator finds it by; they were put back.
	ReasonPodLabelsRestored = "PodLabelsRestored"
	// ReasonPodMissing: a slot owner's pod is missing from the API (deleted,
	// or relabelled) while its peers still reach its process; nothing is
	// replaced or forgotten until its death is proven.
	ReasonPodMissing = "PodMissing"
	// ReasonReplacementBackoff: new nodes are held back after repeated
	// container failures (ContainersHealthy, and Progressing while it holds).
	ReasonReplacementBackoff = "ReplacementBackoff"
	// ReasonHeldForVersion: node creations and the roll wait while a node
	// runs another Valkey version than its image declares, or a downgrade
	// the data forbids is asked for (VersionMatches says which).
	ReasonHeldForVersion = "HeldForVersion"
	// ReasonNodesUnseen: the cluster waits, briefly, for the ValkeyNodes
	// it just created to reach the operator's cache before it plans again.
	ReasonNodesUnseen = "NodesUnseen"
	// ReasonRolloutWaiting: the cluster owes a roll, and a ValkeyImage or
	// ValkeyConfig it uses has not given it its turn: every rollout slot
	// is taken, its canaries have not finished, or a failed roll holds
	// the rollout. Only the roll waits; the message says which.
	ReasonRolloutWaiting = "RolloutWaiting"
)

// Reasons of the CertificatesServed condition beyond those above.
const (
	// ReasonServingCurrent: every node serves the Secret's certificate.
	ReasonServingCurrent = "ServingCurrent"
)

// ReasonCABundleRequired (TLSValid, and the Warning Event that goes with
// it): the Secret's ca.crt no longer trusts a certificate the nodes may
// still serve, a CA rotation that skipped the bundle step. The copy the
// nodes mount is held, so they keep one CA between them; the cluster is
// Invalid until ca.crt bundles the old CA with the new one.
const ReasonCABundleRequired = "CABundleRequired"

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

// Reasons of ContainersHealthy beyond ReasonReplacementBackoff. A waiting
// container keeps the kubelet's own reason (ErrImagePull, ImagePullBackOff,
// CrashLoopBackOff, ...), which is what a reader searches for; an exited
// one is OOMKilled or ContainerExited.
const (
	ReasonContainersRunning = "ContainersRunning"
	ReasonContainerExited   = "ContainerExited"
	ReasonOOMKilled         = "OOMKilled"
)

// ReasonPrimaryLostNoReplica is the reason of CondDataLost and of the
// Warning Event that goes with it.
const ReasonPrimaryLostNoReplica = "PrimaryLostNoReplica"

// CondPodCreated records on a ValkeyNode, with reason ReasonPodCreated, that
// its pod was created, so a dead pod is never recreated: a node whose pod is
// gone is replaced by a new node. False with ReasonPodRefused, the apiserver
// refused the pod (a priorityClassName that names no PriorityClass, a quota,
// an admission policy) and its creation is retried.
const (
	CondPodCreated   = "PodCreated"
	ReasonPodCreated = "Created"
	ReasonPodRefused = "PodRefused"
	// ReasonPodCreatedEvent is the reason of the Normal Event on the
	// ValkeyNode when its pod is created.
	ReasonPodCreatedEvent = "PodCreated"
)

// CondBackupComplete is the one condition of a ValkeyBackup: True once
// the manifest is written, False with the reason the backup waits or
// failed.
const CondBackupComplete = "Complete"

// Reasons of CondBackupComplete.
const (
	// ReasonBackupWaiting: the cluster exists but is not Active.
	ReasonBackupWaiting = "ClusterNotActive"
	// ReasonBackupClusterNotFound: spec.cluster names no ValkeyCluster.
	ReasonBackupClusterNotFound = "ClusterNotFound"
	// ReasonBackupDestinationInvalid: the credentials or CA Secret is
	// missing or incomplete, or the store refused them or the bucket.
	ReasonBackupDestinationInvalid = "DestinationInvalid"
	// ReasonBackupSnapshotFailed: a shard's snapshot or the manifest could
	// not be written (a node lost mid-stream, the store unreachable).
	ReasonBackupSnapshotFailed = "SnapshotFailed"
	// ReasonBackupRunning: every shard's snapshot is streaming.
	ReasonBackupRunning = "Running"
	// ReasonBackupCompleted: every shard and the manifest are written.
	ReasonBackupCompleted = "Completed"
)

// Condition types of a ValkeyScheduledBackup.
const (
	// CondScheduleValid is False while spec.schedule is not a cron
	// expression the operator reads; its message names the bad field.
	CondScheduleValid = "ScheduleValid"
	// CondRetentionApplied is False while a backup out of retention could
	// not be pruned; its message carries the store's error.
	CondRetentionApplied = "RetentionApplied"
)

// Reasons of CondScheduleValid and CondRetentionApplied.
const (
	// ReasonScheduleParsed: spec.schedule is read; backups are created at
	// its due times (unless suspended).
	ReasonScheduleParsed = "ScheduleParsed"
	// ReasonScheduleInvalid: spec.schedule is not a cron expression of
	// five fields, or six with seconds first; no backup is created.
	ReasonScheduleInvalid = "InvalidSchedule"
	// ReasonWithinRetention: every backup out of retention is pruned, or
	// none is.
	ReasonWithinRetention = "WithinRetention"
	// ReasonPruneFailed: a backup's objects could not be deleted from the
	// store; the ValkeyBackup stays and pruning is retried.
	ReasonPruneFailed = "PruneFailed"
)

// CondDeletionBlocked is present on a ValkeyImage, ValkeyConfig or
// ValkeyRole whose deletion waits: True, with reason ReasonInUse, while a
// config or cluster still uses it, the message naming them. The Warning
// Event of the same reason says so once per change of that list.
const (
	CondDeletionBlocked = "DeletionBlocked"
	ReasonInUse         = "InUse"
)

// CondVersionMatches reports whether every node that answers runs the
// Valkey version its ValkeyImage declares (INFO server valkey_version
// against spec.version). While it is False no node is created, so a roll
// onto a mislabelled image stops at the first node that shows it.
const (
	CondVersionMatches = "VersionMatches"
	// ReasonVersionsMatch: every node that answers runs its declared
	// version.
	ReasonVersionsMatch = "VersionsMatch"
	// ReasonVersionMismatch: a node runs another version than its image
	// declares (also the Warning Event).
	ReasonVersionMismatch = "VersionMismatch"
	// ReasonDowngradeBlocked: a roll to an older major version stopped at
	// a replica that cannot load what its newer primary holds (also the
	// Warning Event).
	ReasonDowngradeBlocked = "DowngradeBlocked"
)
