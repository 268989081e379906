package v1alpha1

// Label, annotation and finalizer keys the operator sets or reads: the one
// place that names them. The local runtime that tests and the demo run on
// names its own (internal/localkube); they are no part of the API.
const (
	// LabelName is set to LabelNameValue on every Valkey pod.
	LabelName      = "app.kubernetes.io/name"
	LabelNameValue = "valkey"
	// LabelInstance carries the cluster name; the Service and the operator select on it.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelManagedBy marks every object the operator creates.
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	LabelManagedByValue = "valkey-operator"
	// LabelPartOf marks the cluster-level objects as part of Valkey.
	LabelPartOf      = "app.kubernetes.io/part-of"
	LabelPartOfValue = LabelNameValue
	// LabelShardIndex is the node's scheduling index.
	LabelShardIndex = "valkey.gomomento.com/shard-index"
	// LabelJoinType says why a ValkeyNode was created (never on pods).
	LabelJoinType = "valkey.gomomento.com/join-type"
	// LabelScheduledBackup carries, on a ValkeyBackup a schedule created,
	// the ValkeyScheduledBackup's name.
	LabelScheduledBackup = "valkey.gomomento.com/scheduled-backup"

	// LabelRestoreOf carries, on a restore's scratch servers (loaders), the
	// cluster being restored. They carry no LabelInstance: they must never
	// be taken for the cluster's nodes or serve its clients.
	LabelRestoreOf = "valkey.gomomento.com/restore-of"

	JoinTypeReplica = "replica"
	JoinTypePrimary = "primary"
	JoinTypeShard   = "shard"

	// AnnotationFailoverRequested records, on a ValkeyNode, when the operator
	// last sent it CLUSTER FAILOVER (RFC 3339), so the request is not repeated
	// while the roles flip, even across an operator restart.
	AnnotationFailoverRequested = "valkey.gomomento.com/failover-requested-at"
	// AnnotationFailoverRequestedMode records with it which variant was
	// sent (default, force or takeover): a stronger one is not held back
	// by a weaker one still in flight, whose precondition is gone.
	AnnotationFailoverRequestedMode = "valkey.gomomento.com/failover-requested-mode"
	// AnnotationLeavingSince records, on a ValkeyNode, when the operator
	// marked it Leaving (RFC 3339): a drained primary stays in the cluster
	// for a grace period after it, even across an operator restart.
	AnnotationLeavingSince = "valkey.gomomento.com/leaving-since"

	// AnnotationLiveSettingsPending lists, on a ValkeyNode, the live
	// settings recorded in its spec that the node has not yet confirmed
	// taking (comma-separated): until it does, a difference on them is an
	// edit being applied, not drift, and the cluster is not converged.
	AnnotationLiveSettingsPending = "valkey.gomomento.com/live-settings-pending"
	// AnnotationLiveSettingsRefused records, on a ValkeyNode, the digest of
	// settings whose live values its server refused (CONFIG SET): they were
	// not recorded, and the node is replaced with them instead, as for any
	// edit a node cannot take in place.
	AnnotationLiveSettingsRefused = "valkey.gomomento.com/live-settings-refused"
	// AnnotationConfDigest records, on a ValkeyNode, the digest of the
	// valkey.conf its ConfigMap was last written with: a live settings
	// edit recorded on the node changes the rendering, and the ConfigMap
	// is written again for the server's next start.
	AnnotationConfDigest = "valkey.gomomento.com/conf-digest"
	// AnnotationConfigDrift on a ValkeyCluster says what the operator does
	// when a node runs a live setting other than the rendered one:
	// ConfigDriftRevert (the default, also for any other value) sets it
	// back, ConfigDriftReport only reports it.
	AnnotationConfigDrift = "valkey.gomomento.com/config-drift"
	ConfigDriftRevert     = "revert"
	ConfigDriftReport     = "report"

	// AnnotationPaused set to "true" on a ValkeyCluster holds every action
	// of its planner (status, TLS and ACL reloads keep running).
	AnnotationPaused = "valkey.gomomento.com/paused"

	// AnnotationRolloutRelease on a ValkeyImage or ValkeyConfig releases
	// the hold a failed roll put on its rollout (status.rollout.hold): the
	// waiting clusters go on, and no new hold is taken until the spec
	// changes again. Any value works; the operator removes it once done.
	AnnotationRolloutRelease = "valkey.gomomento.com/rollout-release"

	// AnnotationRotateCredentials on a ValkeyCluster asks for new passwords
	// of the operator's and the replication user: any value not yet served
	// starts one rotation (a timestamp, say).
	AnnotationRotateCredentials = "valkey.gomomento.com/rotate-credentials"
	// AnnotationCredentialsRotated, on {cluster}-operator-auth, is the
	// AnnotationRotateCredentials value whose rotation has completed.
	AnnotationCredentialsRotated = "valkey.gomomento.com/credentials-rotated"
	// AnnotationCredentialsSwitchedAt, on {cluster}-operator-auth, is when
	// the rotation under way made the new passwords current (RFC 3339).
	AnnotationCredentialsSwitchedAt = "valkey.gomomento.com/credentials-switched-at"
	// AnnotationCredentialsRotating, on {cluster}-operator-auth, is the
	// request the rotation under way serves: a request changed meanwhile
	// starts another.
	AnnotationCredentialsRotating = "valkey.gomomento.com/credentials-rotating"
	// AnnotationReplacementBackoff records on a ValkeyCluster how many node
	// containers exited in a row and when the last did. It lives in the
	// API rather than in memory so an operator restart does not forget a
	// crash loop and start recreating hot again.
	AnnotationReplacementBackoff = "valkey.gomomento.com/replacement-backoff"
	// AnnotationVerifiedLeaves, on {cluster}-node-tls, lists the
	// fingerprints of leaves the operator has verified nodes serving. When
	// a CA is rotated without the bundle step, the new ca.crt no longer
	// trusts what the nodes still serve, yet the operator must connect to
	// them to issue the very reload that fixes it. It then accepts a node
	// whose leaf is one it verified before (the handshake still proves the
	// node holds that leaf's key, and the hostname is still checked),
	// rather than trusting the old CA wholesale: a CA is often rotated
	// because it can no longer be trusted. It is kept on the Secret, not in
	// memory, so an operator restart in the middle of a rotation does not
	// strand the nodes.
	AnnotationVerifiedLeaves = "valkey.gomomento.com/verified-leaves"

	// ConditionSynced is the readiness gate of every Valkey pod: True once
	// the node holds its shard's data (a primary, or a replica whose initial
	// sync is done and whose link is up). The operator sets it; a pod is
	// Ready, and counts for its shard's PodDisruptionBudget, only with it.
	ConditionSynced = "valkey.gomomento.com/synced"

	// ReservedPrefix is refused in pod labels and in spec.podAnnotations.
	ReservedPrefix = "valkey.gomomento.com/"

	// FinalizerCluster guards a ValkeyCluster's teardown.
	FinalizerCluster = "valkey.gomomento.com/cleanup"
	// FinalizerCredentials keeps a cluster's {cluster}-operator-auth Secret
	// readable after a deletion request, so the operator can recreate it
	// with the same passwords: the running nodes know no others.
	FinalizerCredentials = "valkey.gomomento.com/credentials"
	// FinalizerMetering keeps a ValkeyMeteringRecord until it is released.
	FinalizerMetering = "valkey.gomomento.com/metering"
	// AnnotationRelease set to "true" on a ValkeyMeteringRecord releases
	// it: once it is also deleted, it goes.
	AnnotationRelease = "valkey.gomomento.com/release"
	// FinalizerInUse holds the deletion of a ValkeyImage, ValkeyConfig or
	// ValkeyRole while a config or cluster still uses it.
	FinalizerInUse = "valkey.gomomento.com/in-use"
	// FinalizerNode guards a ValkeyNode's teardown.
	FinalizerNode = "valkey.gomomento.com/node-cleanup"
)

// OperatorPodLabels are the labels outside ReservedPrefix the operator sets
// on every Valkey pod and selects on; a user's pod labels may not set them
// (the admission rules of spec.pod.labels and spec.podLabels spell this
// list, and a test keeps them equal).
var OperatorPodLabels = []string{LabelName, LabelInstance, LabelManagedBy}
