package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyConfigSpec is one item of the platform team's menu. Every field is
// optional; a config is usable once imageRef is set somewhere along its
// baseRef chain.
//
// A valkey maxmemory above resources.memory of the same config is refused:
// the container would be OOM-killed before Valkey's limit ever applied.
// Values that leave too little headroom, or none (0), those combined across
// the baseRef chain and the key spelled in another case are reported by
// each cluster's MemoryHeadroom condition instead.
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || !has(self.valkey) || self.valkey.all(k, !(k.lowerAscii() in ['appendonly', 'appendfsync', 'dir', 'save']))",message="appendonly, appendfsync, dir and save are set by spec.persistence and cannot be set in spec.valkey of a config with persistence"
// +kubebuilder:validation:XValidation:rule="!has(self.resources) || !has(self.resources.memory) || !isQuantity(self.resources.memory) || !has(self.valkey) || !('maxmemory' in self.valkey) || !self.valkey['maxmemory'].matches('^[0-9]{1,15}([kKmMgG][bB]?|[bB])?$') || double(self.valkey['maxmemory'].find('^[0-9]+')) * (self.valkey['maxmemory'].endsWith('kb') || self.valkey['maxmemory'].endsWith('KB') ? 1024.0 : self.valkey['maxmemory'].endsWith('mb') || self.valkey['maxmemory'].endsWith('MB') ? 1048576.0 : self.valkey['maxmemory'].endsWith('gb') || self.valkey['maxmemory'].endsWith('GB') ? 1073741824.0 : self.valkey['maxmemory'].endsWith('k') || self.valkey['maxmemory'].endsWith('K') ? 1000.0 : self.valkey['maxmemory'].endsWith('m') || self.valkey['maxmemory'].endsWith('M') ? 1000000.0 : self.valkey['maxmemory'].endsWith('g') || self.valkey['maxmemory'].endsWith('G') ? 1000000000.0 : 1.0) <= quantity(self.resources.memory).asApproximateFloat()",message="valkey maxmemory exceeds resources.memory: the container would be OOM-killed before maxmemory applies; leave maxmemory unset to have it derived with headroom"
type ValkeyConfigSpec struct {
	// ImageRef is the name of a ValkeyImage.
	// +optional
	ImageRef string `json:"imageRef,omitempty"`

	// BaseRef is the name of the parent ValkeyConfig whose settings this one
	// inherits and overrides.
	// +optional
	BaseRef string `json:"baseRef,omitempty"`

	// Resources of each Valkey container; each value becomes both the request
	// and the limit.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Valkey directives written into each node's configuration file. Keys the
	// operator owns (authentication, ACL, TLS and include directives) are
	// refused; the forced cluster settings always override the rest.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-zA-Z0-9_-]+$'))",message="directive names must match ^[a-zA-Z0-9_-]+$"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['requirepass', 'primaryauth', 'masterauth', 'primaryuser', 'masteruser', 'aclfile', 'user', 'include']))",message="authentication, ACL and include directives are managed by the operator and cannot be set in spec.valkey"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.lowerAscii().startsWith('tls-'))",message="tls-* directives are managed by the operator and cannot be set in spec.valkey"
	Valkey map[string]string `json:"valkey,omitempty"`

	// ACL bindings applied to every cluster using this config. The first
	// config along the baseRef chain that sets acl wins; an empty list is set
	// and clears inherited bindings.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.username == x.username))",message="duplicate username in ACL bindings"
	ACL []AclBinding `json:"acl,omitzero"`

	// Exporter runs a Prometheus exporter for Valkey (redis_exporter) in every
	// node's pod, next to the Valkey container. The first config along the
	// baseRef chain that sets exporter.enabled wins. Turning it on or off
	// replaces the cluster's nodes one at a time, like any node setting.
	// +optional
	Exporter *Exporter `json:"exporter,omitempty"`

	// Persistence keeps each node's data on its own PersistentVolumeClaim,
	// written as an append-only file, so a restarted node comes back with
	// its keys and its cluster identity. Unset, nodes keep their data in
	// memory only and lose it with their pod. The first config along the
	// baseRef chain that sets persistence wins, as a whole. See
	// docs/durability.md.
	// +optional
	Persistence *Persistence `json:"persistence,omitempty"`

	// Pod is the placement and metadata of every node's pod: tolerations,
	// affinity, priority, image pull secrets, spread, labels and
	// annotations. See PodSettings for how each is inherited and which
	// changes replace the nodes.
	// +optional
	Pod *PodSettings `json:"pod,omitempty"`

	// Rollout paces the roll an edit of this config starts across the
	// clusters that use it, directly or through baseRef. Unset, one
	// cluster rolls at a time. It is never inherited: each config along a
	// chain paces its own edits.
	// +optional
	Rollout *RolloutPolicy `json:"rollout,omitempty"`
}

// AppendFsync is when Valkey flushes its append-only file to disk.
// +kubebuilder:validation:Enum=always;everysec
type AppendFsync string

const (
	// AppendFsyncAlways flushes before acknowledging each write: nothing
	// acknowledged is lost.
	AppendFsyncAlways AppendFsync = "always"
	// AppendFsyncEverysec flushes once a second: up to about a second of
	// acknowledged writes can be lost.
	AppendFsyncEverysec AppendFsync = "everysec"
)

// Persistence is the volume each node keeps its data on.
type Persistence struct {
	// Size of each node's volume, for example 10Gi. Raising it expands
	// every node's claim in place, where the StorageClass allows expansion;
	// it cannot be lowered, since a volume cannot shrink.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="persistence.size must be greater than zero"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",messageExpression="'persistence.size cannot shrink from ' + string(oldSelf) + ' to ' + string(self) + ': a volume cannot be made smaller, only larger'"
	Size resource.Quantity `json:"size"`

	// StorageClassName of each node's claim; unset uses the cluster's
	// default StorageClass.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName string `json:"storageClassName,omitempty"`

	// Appendfsync is Valkey's appendfsync: always (no acknowledged write
	// lost, each write waits for the disk) or everysec (up to about one
	// second of writes lost on a crash).
	// +optional
	// +kubebuilder:default=everysec
	Appendfsync AppendFsync `json:"appendfsync,omitempty"`
}

// Exporter configures the per-node metrics exporter.
type Exporter struct {
	// Enabled runs the exporter. Unset inherits from the base config; unset
	// along the whole chain means off.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// Resources are Kubernetes quantities for the Valkey container.
type Resources struct {
	// CPU request and limit, for example 500m.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isQuantity(self)",message="cpu must be a Kubernetes quantity, for example 500m or 2"
	CPU string `json:"cpu,omitempty"`

	// Memory request and limit, for example 1Gi.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isQuantity(self)",message="memory must be a Kubernetes quantity, for example 1Gi"
	Memory string `json:"memory,omitempty"`
}

// ValkeyConfigStatus reports a deletion held while the config is in use,
// and the rollout of the config's edits.
type ValkeyConfigStatus struct {
	// Conditions: DeletionBlocked, present while a deletion waits for the
	// objects that use this one, its message naming them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Rollout lists the clusters rolling because of this config and any hold.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// ValkeyConfig is a cluster-scoped, inheritable set of node settings.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=vkcfg
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ImageRef",type=string,JSONPath=`.spec.imageRef`
// +kubebuilder:printcolumn:name="BaseRef",type=string,JSONPath=`.spec.baseRef`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.baseRef) || self.spec.baseRef != self.metadata.name",message="spec.baseRef must not name the config itself"
type ValkeyConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   ValkeyConfigSpec   `json:"spec,omitempty"`
	Status ValkeyConfigStatus `json:"status,omitempty"`
}

// ValkeyConfigList is a list of ValkeyConfig.
// +kubebuilder:object:root=true
type ValkeyConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyConfig `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyConfig{}, &ValkeyConfigList{})
}
