package v1alpha1

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyClusterSpec is a product team's request for a Valkey cluster.
// A Valkey cluster is meant for at most 1000 nodes (the cluster bus gossips
// between every pair, so its traffic grows with the square of the size);
// the shape, and the largest shard count autoscaling may reach, are held to
// that.
// +kubebuilder:validation:XValidation:rule="self.shards * (self.replicasPerShard + 1) <= 1000",message="shards x (replicasPerShard + 1) must be at most 1000 nodes"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || self.autoscaling.maxShards * (self.replicasPerShard + 1) <= 1000",message="autoscaling.maxShards x (replicasPerShard + 1) must be at most 1000 nodes"
type ValkeyClusterSpec struct {
	// ConfigRef is the name of the ValkeyConfig the nodes run with.
	// +kubebuilder:validation:MinLength=1
	ConfigRef string `json:"configRef"`

	// Shards is the number of primaries holding slots.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Shards int32 `json:"shards"`

	// ReplicasPerShard is the number of replicas of each primary (the primary
	// is not counted: 1 means two nodes per shard).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5
	ReplicasPerShard int32 `json:"replicasPerShard"`

	// ACL bindings added to those of the config chain; a username may not
	// repeat one of the config's.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.username == x.username))",message="duplicate username in ACL bindings"
	ACL []AclBinding `json:"acl,omitempty"`

	// Placement of the cluster's pods.
	// +optional
	Placement *Placement `json:"placement,omitempty"`

	// TLS makes every node TLS-only. Whether it is set cannot change after
	// creation; only secretRef may change.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// PodAnnotations are applied to the pods only. Additions and changes are
	// patched onto running pods in place; a removed key stays on running pods
	// until they are next replaced. Keys under valkey.gomomento.com/ are reserved.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('valkey.gomomento.com/'))",message="annotation keys with the prefix valkey.gomomento.com/ are reserved for the operator"
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// PodLabels are added to the pods, beside the config's spec.pod.labels
	// (a key of both takes this value). The operator's own labels cannot be
	// set. Additions and changes are applied to running pods in place; a
	// removed key stays on running pods until they are next replaced.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$') && k.split('/')[k.split('/').size() - 1].size() <= 63 && (k.split('/').size() == 1 || k.split('/')[0].size() <= 253))",message="spec.podLabels: keys must be valid label keys ([prefix/]name, name at most 63 characters)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by']) && !k.startsWith('valkey.gomomento.com/'))",message="spec.podLabels: app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/managed-by and keys under valkey.gomomento.com/ are the operator's"
	PodLabels map[string]LabelValue `json:"podLabels,omitempty"`

	// Autoscaling makes spec.shards the starting count of a shard count driven
	// by utilisation.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// Restore fills the new cluster with a backup's keys before it is
	// Active. Read at creation only.
	// +optional
	Restore *ClusterRestore `json:"restore,omitempty"`

	// NetworkPolicy says who may connect to the cluster's pods. Unset, the
	// operator keeps a NetworkPolicy that admits clients from the cluster's
	// own namespace only.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`
}

// NetworkPolicySpec shapes the NetworkPolicy {cluster}-ingress the operator
// keeps for the cluster's pods. It admits, and nothing else: the clients
// below to the client port (6379); the cluster's own pods to the client
// port and the cluster bus (16379), for gossip, replication and key
// migration; the operator's namespace to the client port; and, while the
// cluster's config runs the metrics exporter, the scrapers below to its
// port (9121). Kubelet probes come from the node, which most network
// plugins admit regardless.
type NetworkPolicySpec struct {
	// Enabled false removes the operator's NetworkPolicy: the pods then
	// accept connections from anywhere the network lets through.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// Clients may connect to the client port, named as in a NetworkPolicy
	// rule's from: podSelector (this namespace), namespaceSelector (e.g.
	// kubernetes.io/metadata.name: my-app), both, or ipBlock. Empty: every
	// pod of the cluster's namespace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(p, has(p.podSelector) || has(p.namespaceSelector) || has(p.ipBlock))",message="each peer names pods, namespaces or an ipBlock"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.ipBlock) || (!has(p.podSelector) && !has(p.namespaceSelector)))",message="a peer with an ipBlock names nothing else"
	Clients []networkingv1.NetworkPolicyPeer `json:"clients,omitempty"`

	// Scrapers may connect to the metrics exporter's port, named as
	// clients are; Prometheus usually runs in a namespace of its own, which
	// must be named here. Empty: every pod of the cluster's namespace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(p, has(p.podSelector) || has(p.namespaceSelector) || has(p.ipBlock))",message="each peer names pods, namespaces or an ipBlock"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.ipBlock) || (!has(p.podSelector) && !has(p.namespaceSelector)))",message="a peer with an ipBlock names nothing else"
	Scrapers []networkingv1.NetworkPolicyPeer `json:"scrapers,omitempty"`
}

// TLSSpec names the Secret with the nodes' certificate.
type TLSSpec struct {
	// SecretRef is a kubernetes.io/tls Secret in the cluster's namespace with
	// tls.crt, tls.key and ca.crt. Its SANs must include
	// {cluster}.{namespace}.svc.cluster.local and *.{cluster}.{namespace}.svc.cluster.local.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretRef string `json:"secretRef"`
}

// Autoscaling bounds and triggers for the shard count.
// +kubebuilder:validation:XValidation:rule="self.maxShards >= self.minShards",message="maxShards must be greater than or equal to minShards"
// +kubebuilder:validation:XValidation:rule="!has(self.scaleIn) || !has(self.scaleIn.memoryPercent) || (has(self.scaleOut.memoryPercent) && self.scaleIn.memoryPercent < self.scaleOut.memoryPercent)",message="scaleIn.memoryPercent must be below scaleOut.memoryPercent"
// +kubebuilder:validation:XValidation:rule="!has(self.scaleIn) || !has(self.scaleIn.cpuPercent) || (has(self.scaleOut.cpuPercent) && self.scaleIn.cpuPercent < self.scaleOut.cpuPercent)",message="scaleIn.cpuPercent must be below scaleOut.cpuPercent"
type Autoscaling struct {
	// +kubebuilder:validation:Minimum=1
	MinShards int32 `json:"minShards"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxShards int32 `json:"maxShards"`

	// ScaleOut adds one shard when the latest sample of any primary reaches a threshold.
	ScaleOut ScaleOutTriggers `json:"scaleOut"`

	// ScaleIn removes one shard when every node's peak over the window is
	// below every threshold. Omit to never scale in.
	// +optional
	ScaleIn *ScaleInTriggers `json:"scaleIn,omitempty"`

	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=30
	ScaleInWindowSeconds int32 `json:"scaleInWindowSeconds,omitempty"`
	// ScaleOutCooldownSeconds is the least time between two scale-outs.
	// A pointer so that 0 (no cooldown) is kept rather than defaulted.
	// +optional
	// +kubebuilder:default=180
	// +kubebuilder:validation:Minimum=0
	ScaleOutCooldownSeconds *int32 `json:"scaleOutCooldownSeconds,omitempty"`
	// ScaleInCooldownSeconds is the least time from any scaling decision to
	// a scale-in. A pointer so that 0 (no cooldown) is kept.
	// +optional
	// +kubebuilder:default=900
	// +kubebuilder:validation:Minimum=0
	ScaleInCooldownSeconds *int32 `json:"scaleInCooldownSeconds,omitempty"`
}

// ScaleOutTriggers are thresholds; an unset one is off.
type ScaleOutTriggers struct {
	// Percent of maxmemory (or of the container memory limit without maxmemory).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MemoryPercent *float64 `json:"memoryPercent,omitempty"`
	// Percent of the container CPU limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CPUPercent *float64 `json:"cpuPercent,omitempty"`
	// Inbound plus outbound throughput of one node, in Mbit/s.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BandwidthMbps *float64 `json:"bandwidthMbps,omitempty"`
}

// ScaleInTriggers are thresholds; an unset one is off.
type ScaleInTriggers struct {
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MemoryPercent *float64 `json:"memoryPercent,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CPUPercent *float64 `json:"cpuPercent,omitempty"`
}

// ClusterState is the summary state of a ValkeyCluster. No state is terminal:
// every failure recovers once its cause is fixed.
// +kubebuilder:validation:Enum=Creating;Active;Updating;Invalid
type ClusterState string

const (
	StateCreating ClusterState = "Creating"
	StateActive   ClusterState = "Active"
	StateUpdating ClusterState = "Updating"
	StateInvalid  ClusterState = "Invalid"
)

// ValkeyClusterStatus is the observed state of a ValkeyCluster.
type ValkeyClusterStatus struct {
	// State summarises the cluster; a missing status counts as Creating.
	// +optional
	State ClusterState `json:"state,omitempty"`

	// Message explains the state, for example the exact TLS validation failure.
	// +optional
	Message string `json:"message,omitempty"`

	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Progressing, Degraded, TLSValid,
	// CertificateExpiringSoon, VersionMatches and others; see the
	// troubleshooting guide.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// TargetSpec is the topology bootstrap is building; edits to shards and
	// replicasPerShard made while Creating are applied once Active.
	// +optional
	TargetSpec *TargetTopology `json:"targetSpec,omitempty"`

	// Shards is the number of primaries holding slots.
	// +optional
	Shards int32 `json:"shards,omitempty"`

	// Selector of the cluster's pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Nodes lists the names of the cluster's ValkeyNodes.
	// +optional
	Nodes []string `json:"nodes,omitempty"`

	// ReadyNodes counts nodes whose pod is running and which are cluster members.
	// +optional
	ReadyNodes int32 `json:"readyNodes,omitempty"`

	// SlotsAssigned counts the hash slots held by a primary (16384 when complete).
	// +optional
	SlotsAssigned int32 `json:"slotsAssigned,omitempty"`

	// ShardStatuses describe each shard: its primary, replicas and slots.
	// +optional
	ShardStatuses []ShardStatus `json:"shardStatuses,omitempty"`

	// TLS describes the certificate the nodes serve.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`

	// Autoscaling is the current autoscaling target.
	// +optional
	Autoscaling *AutoscalingStatus `json:"autoscaling,omitempty"`

	// RolledOut are the ValkeyImage and ValkeyConfig generations every node
	// runs, written while no node is outdated: a canary's tells the other
	// clusters of a rollout that it is done.
	// +optional
	RolledOut []RolledOut `json:"rolledOut,omitempty"`

	// Resharding is the slot movement a shard count change still needs;
	// absent once every slot is where the spec puts it.
	// +optional
	Resharding *ReshardingStatus `json:"resharding,omitempty"`

	// Restore is the progress of spec.restore.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`
}

// ReshardingStatus is the progress of a shard count change's slot moves.
type ReshardingStatus struct {
	// SlotsToMove counts slots not yet on the shard the spec puts them on,
	// slots in flight included.
	SlotsToMove int32 `json:"slotsToMove"`
	// SlotsTotal is the largest SlotsToMove seen since the change began.
	SlotsTotal int32 `json:"slotsTotal"`
	// Progress is "<moved>/<total> slots", for kubectl get -o wide.
	Progress string `json:"progress"`
	// Moving are the migrations under way, as their sources report them.
	// +optional
	// +listType=atomic
	Moving []SlotMove `json:"moving,omitempty"`
}

// SlotMove is one migration under way.
type SlotMove struct {
	// Source and Target are node names (a Valkey node ID when the node is
	// not a member of this cluster).
	Source string `json:"source"`
	Target string `json:"target"`
	// Slots as ranges, for example 0-1364.
	Slots     string `json:"slots"`
	SlotCount int32  `json:"slotCount"`
	// Method is atomic (CLUSTER MIGRATESLOTS) or classic (SETSLOT and MIGRATE).
	Method string `json:"method"`
}

// TargetTopology is the shape bootstrap builds.
type TargetTopology struct {
	Shards           int32 `json:"shards"`
	ReplicasPerShard int32 `json:"replicasPerShard"`
}

// ShardStatus is the observed membership of one shard.
type ShardStatus struct {
	// Index is the shard's scheduling index (the pod label), not Valkey's shard ID.
	Index int32 `json:"index"`
	// +optional
	Primary string `json:"primary,omitempty"`
	// +optional
	Replicas []string `json:"replicas,omitempty"`
	// Slots held, as ranges, for example 0-5460.
	// +optional
	Slots string `json:"slots,omitempty"`
	// +optional
	SlotCount int32 `json:"slotCount,omitempty"`
}

// TLSStatus is what the nodes serve compared with the Secret.
type TLSStatus struct {
	// Fingerprint is the SHA-256 of the certificate in the Secret.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
	// NotAfter of the certificate in the Secret.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// NodesServingCurrent counts nodes whose served certificate is the Secret's.
	// +optional
	NodesServingCurrent int32 `json:"nodesServingCurrent,omitempty"`
	// +optional
	NodesTotal int32 `json:"nodesTotal,omitempty"`
}

// AutoscalingStatus is the autoscaler's current target and what it last
// decided.
type AutoscalingStatus struct {
	// DesiredShards is the shard count the cluster is driven to while
	// spec.autoscaling is set; spec.shards is then only the starting count.
	// +optional
	DesiredShards int32 `json:"desiredShards,omitempty"`
	// LastDecision is ScaleOut or ScaleIn: the last change the autoscaler made.
	// +optional
	LastDecision string `json:"lastDecision,omitempty"`
	// LastDecisionMessage says why, as in the decision's Event, for example
	// "1 -> 2 shards: node my-cluster-a1b2c memory 84.2% >= 80%".
	// +optional
	LastDecisionMessage string `json:"lastDecisionMessage,omitempty"`
	// LastDecisionTime is when the last change was decided.
	// +optional
	LastDecisionTime *metav1.Time `json:"lastDecisionTime,omitempty"`
	// LastScaleOutTime starts the scale-out cooldown.
	// +optional
	LastScaleOutTime *metav1.Time `json:"lastScaleOutTime,omitempty"`
	// LastScaleInTime and LastScaleOutTime start the scale-in cooldown.
	// +optional
	LastScaleInTime *metav1.Time `json:"lastScaleInTime,omitempty"`
	// HoldReason says why the last evaluation did not scale, for example
	// Cooldown, WithinThresholds or InsufficientHeadroom.
	// +optional
	HoldReason string `json:"holdReason,omitempty"`
	// HoldMessage explains HoldReason with the figures behind it.
	// +optional
	HoldMessage string `json:"holdMessage,omitempty"`
	// SpecShards is the spec.shards value the autoscaler last saw; a change
	// while autoscaling is on is reported as ignored.
	// +optional
	SpecShards int32 `json:"specShards,omitempty"`
}

// ValkeyCluster is a Valkey cluster in cluster mode, managed by the operator.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=vkc
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.shards,statuspath=.status.shards,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.spec.configRef`
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.spec.shards`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicasPerShard`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Desired Shards",type=integer,JSONPath=`.status.autoscaling.desiredShards`
// +kubebuilder:printcolumn:name="Resharding",type=string,JSONPath=`.status.resharding.progress`,priority=1
// +kubebuilder:printcolumn:name="Restore",type=string,JSONPath=`.status.restore.phase`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 57",message="metadata.name must be at most 57 characters: pod names add a 6-character suffix and must stay a 63-character DNS label"
// +kubebuilder:validation:XValidation:rule="has(self.spec.restore) == has(oldSelf.spec.restore) && (!has(self.spec.restore) || self.spec.restore == oldSelf.spec.restore)",message="spec.restore is read when the cluster is created: it cannot be added, changed or removed",fieldPath=".spec.restore"
// +kubebuilder:validation:XValidation:rule="has(self.spec.tls) == has(oldSelf.spec.tls)",message="spec.tls cannot be added or removed after creation; only spec.tls.secretRef may change",fieldPath=".spec.tls"
type ValkeyCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ValkeyClusterSpec   `json:"spec"`
	Status ValkeyClusterStatus `json:"status,omitempty"`
}

// ValkeyClusterList is a list of ValkeyCluster.
// +kubebuilder:object:root=true
type ValkeyClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyCluster{}, &ValkeyClusterList{})
}
