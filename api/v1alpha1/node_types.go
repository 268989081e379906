package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeLifecycle is where a node is in its life as a cluster member.
// +kubebuilder:validation:Enum=Active;Joining;Leaving
type NodeLifecycle string

const (
	LifecycleJoining NodeLifecycle = "Joining"
	LifecycleActive  NodeLifecycle = "Active"
	LifecycleLeaving NodeLifecycle = "Leaving"
)

// ValkeyNodeSpec records one member. Everything but lifecycle and the
// growth of persistence.size is fixed at creation: a change means a
// replacement node, never an edit.
// +kubebuilder:validation:XValidation:rule="self.clusterName == oldSelf.clusterName",message="spec.clusterName is immutable"
// +kubebuilder:validation:XValidation:rule="self.image == oldSelf.image",message="spec.image is immutable"
// +kubebuilder:validation:XValidation:rule="self.shardIndex == oldSelf.shardIndex",message="spec.shardIndex is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.cpu) == has(oldSelf.cpu) && (!has(self.cpu) || self.cpu == oldSelf.cpu)",message="spec.cpu is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.memory) == has(oldSelf.memory) && (!has(self.memory) || self.memory == oldSelf.memory)",message="spec.memory is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.valkeySettings) == has(oldSelf.valkeySettings) && (!has(self.valkeySettings) || oldSelf.valkeySettings.all(k, k in self.valkeySettings))",message="spec.valkeySettings keys cannot be removed"
// +kubebuilder:validation:XValidation:rule="has(self.tlsSecret) == has(oldSelf.tlsSecret) && (!has(self.tlsSecret) || self.tlsSecret == oldSelf.tlsSecret)",message="spec.tlsSecret is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.placement) == has(oldSelf.placement) && (!has(self.placement) || self.placement == oldSelf.placement)",message="spec.placement is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.exporterImage) == has(oldSelf.exporterImage) && (!has(self.exporterImage) || self.exporterImage == oldSelf.exporterImage)",message="spec.exporterImage is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.persistence) == has(oldSelf.persistence)",message="spec.persistence cannot be added or removed"
type ValkeyNodeSpec struct {
	// ClusterName is the owning ValkeyCluster.
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`

	// Image is the resolved repository:tag.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`

	// CPU copied from the resolved config.
	// +optional
	CPU string `json:"cpu,omitempty"`

	// Memory copied from the resolved config.
	// +optional
	Memory string `json:"memory,omitempty"`

	// ValkeySettings is the merged valkey map with the forced settings applied.
	// An edit of live settings alone is recorded here in place (values
	// change, keys are added, never removed); any other edit replaces the node.
	// +optional
	// +kubebuilder:default={}
	ValkeySettings map[string]string `json:"valkeySettings,omitempty"`

	// ShardIndex is the scheduling index (the pod label
	// valkey.gomomento.com/shard-index), not Valkey's shard ID.
	// +kubebuilder:validation:Minimum=0
	ShardIndex int32 `json:"shardIndex"`

	// TLSSecret is the Secret mounted at /etc/valkey/tls/; set iff the cluster has TLS.
	// +optional
	TLSSecret string `json:"tlsSecret,omitempty"`

	// Placement is a snapshot of the cluster's placement at node creation.
	// +optional
	Placement *Placement `json:"placement,omitempty"`

	// Pod is a snapshot of the config's pod settings at node creation.
	// +optional
	Pod *NodePod `json:"pod,omitempty"`

	// ExporterImage is the metrics exporter's image; set iff the pod runs
	// the exporter next to Valkey.
	// +optional
	ExporterImage string `json:"exporterImage,omitempty"`

	// Persistence is the node's volume; set iff the node keeps its data on
	// a PersistentVolumeClaim (named like the node, owned by it).
	// +optional
	Persistence *NodePersistence `json:"persistence,omitempty"`

	// Lifecycle is, with persistence.size, the only field that changes.
	// +optional
	// +kubebuilder:default=Active
	Lifecycle NodeLifecycle `json:"lifecycle,omitempty"`
}

// NodePersistence is the claim a persistent node's data lives on. Only
// its size changes, and only upwards: the claim is expanded in place.
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="spec.persistence.storageClassName is immutable"
// +kubebuilder:validation:XValidation:rule="self.appendfsync == oldSelf.appendfsync",message="spec.persistence.appendfsync is immutable"
type NodePersistence struct {
	// Size requested by the claim; it may grow, never shrink.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="spec.persistence.size cannot shrink"
	Size resource.Quantity `json:"size"`
	// StorageClassName of the claim; empty uses the default StorageClass.
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
	// Appendfsync is the node's forced appendfsync.
	Appendfsync AppendFsync `json:"appendfsync"`
}

// NodeRole is the node's role in Valkey's topology.
// +kubebuilder:validation:Enum=primary;replica;unknown
type NodeRole string

const (
	RolePrimary NodeRole = "primary"
	RoleReplica NodeRole = "replica"
	RoleUnknown NodeRole = "unknown"
)

// ValkeyNodeStatus is what the operator last observed of the node.
type ValkeyNodeStatus struct {
	// NodeID is Valkey's cluster node ID.
	// +optional
	NodeID string `json:"nodeID,omitempty"`
	// Role in the Valkey topology.
	// +optional
	Role NodeRole `json:"role,omitempty"`
	// PodIP of the node's pod.
	// +optional
	PodIP string `json:"podIP,omitempty"`
	// Slots are the hash slots the node served as a primary when the
	// operator last asked it, as ranges ("0-5460,10923"); empty for a
	// replica. They name the keys lost when every copy of a shard goes at
	// once and nobody is left to ask.
	// +optional
	Slots string `json:"slots,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Utilisation is what the operator sampled from the node itself, every
	// 30 seconds by default; it feeds autoscaling and metering. A node of a
	// cluster with spec.autoscaling has every sample written as it is
	// taken; any other node when its peak, denominator or CPU limit
	// changes, else every 5 minutes, with the samples taken in between.
	// +optional
	Utilisation *NodeUtilisation `json:"utilisation,omitempty"`
}

// NodeUtilisation holds a node's recent samples and the figures derived from
// them. The history is bounded: it covers the cluster's scale-in window and
// no more.
type NodeUtilisation struct {
	// Samples, oldest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=200
	Samples []UtilisationSample `json:"samples,omitempty"`
	// PeakUsedMemoryBytes is the highest used_memory seen since the node
	// started (Valkey's used_memory_peak).
	// +optional
	PeakUsedMemoryBytes int64 `json:"peakUsedMemoryBytes,omitempty"`
	// MemoryDenominatorBytes is what memoryPercent divides by: maxmemory, else
	// the container memory limit; 0 when neither is set.
	// +optional
	MemoryDenominatorBytes int64 `json:"memoryDenominatorBytes,omitempty"`
	// CPULimitMillis is what cpuPercent divides by; 0 without a CPU limit.
	// +optional
	CPULimitMillis int64 `json:"cpuLimitMillis,omitempty"`
}

// UtilisationSample is one 30-second sample. A percentage whose denominator
// cannot be computed is absent, not zero.
type UtilisationSample struct {
	Time metav1.Time `json:"time"`
	// +optional
	MemoryPercent *float64 `json:"memoryPercent,omitempty"`
	// +optional
	CPUPercent *float64 `json:"cpuPercent,omitempty"`
	// BandwidthMbps is inbound plus outbound network throughput since the
	// previous sample, in Mbit/s.
	// +optional
	BandwidthMbps *float64 `json:"bandwidthMbps,omitempty"`
	// UsedMemoryBytes is Valkey's used_memory at the sample.
	// +optional
	UsedMemoryBytes int64 `json:"usedMemoryBytes,omitempty"`
}

// ValkeyNode is the operator's record of one Valkey process. Users get read
// access only.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=vkn
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Shard",type=integer,JSONPath=`.spec.shardIndex`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.status.role`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Lifecycle",type=string,JSONPath=`.spec.lifecycle`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ValkeyNodeSpec   `json:"spec"`
	Status ValkeyNodeStatus `json:"status,omitempty"`
}

// ValkeyNodeList is a list of ValkeyNode.
// +kubebuilder:object:root=true
type ValkeyNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyNode `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyNode{}, &ValkeyNodeList{})
}
