package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyBackupSpec names the cluster to back up and where to write it. A
// backup is taken once; the spec cannot change after it is created (take
// another backup instead).
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable; create another ValkeyBackup"
type ValkeyBackupSpec struct {
	// Cluster is the name of the ValkeyCluster, in the backup's namespace.
	// +kubebuilder:validation:MinLength=1
	Cluster string `json:"cluster"`
	// Destination is the S3-compatible bucket the backup is written to.
	Destination BackupDestination `json:"destination"`
}

// BackupDestination is a bucket on an S3-compatible object store.
type BackupDestination struct {
	// Bucket must exist; the operator does not create it.
	// +kubebuilder:validation:MinLength=3
	Bucket string `json:"bucket"`
	// Prefix is prepended to every object the backup writes, without a
	// leading or trailing slash.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.endsWith('/')",message="prefix must not start or end with /"
	Prefix string `json:"prefix,omitempty"`
	// Endpoint is the store's URL, scheme and host (and port), such as
	// https://s3.us-east-1.amazonaws.com. http:// is accepted only with
	// insecure: true.
	// +kubebuilder:validation:Pattern=`^https?://[^/]+/?$`
	Endpoint string `json:"endpoint"`
	// Insecure allows an http:// endpoint: credentials and data then
	// travel in clear text.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// Region is sent with signed requests; empty lets the client find it.
	// +optional
	Region string `json:"region,omitempty"`
	// CredentialsSecretRef is a Secret in the backup's namespace with the
	// keys accessKeyID and secretAccessKey.
	// +kubebuilder:validation:MinLength=1
	CredentialsSecretRef string `json:"credentialsSecretRef"`
	// CASecretRef is a Secret in the backup's namespace whose ca.crt is the
	// CA the endpoint's certificate is verified against, instead of the
	// system's roots.
	// +optional
	CASecretRef string `json:"caSecretRef,omitempty"`
}

// BackupPhase is where a backup is in its life; Completed and Failed are
// final.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type BackupPhase string

const (
	// BackupPending: not started; the cluster is not Active yet or the
	// destination has not been checked.
	BackupPending BackupPhase = "Pending"
	// BackupRunning: every shard's snapshot is streaming to the bucket.
	BackupRunning BackupPhase = "Running"
	// BackupCompleted: every shard and then the manifest were written.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed: the backup stopped; status.message says why. The
	// objects already written stay, but without a manifest.
	BackupFailed BackupPhase = "Failed"
)

// BackupShard is one shard's snapshot.
type BackupShard struct {
	// Index is the shard's position, by its lowest slot.
	Index int32 `json:"index"`
	// Node is the ValkeyNode the snapshot was streamed from.
	Node string `json:"node"`
	// Slots are the shard's slot ranges when the snapshot started, such
	// as "0-8191".
	Slots []string `json:"slots"`
	// Object is the snapshot's key in the bucket.
	Object string `json:"object"`
	// Keys is the node's key count (INFO keyspace) when the snapshot
	// started.
	Keys int64 `json:"keys"`
	// Bytes is the size of the RDB file.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// SHA256 is the hex checksum of the RDB file.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// ValkeyVersion is what the source node runs.
	ValkeyVersion string `json:"valkeyVersion"`
}

// ValkeyBackupStatus is what the operator reports of a backup.
type ValkeyBackupStatus struct {
	// Phase: Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Message says why the backup waits or failed.
	// +optional
	Message string `json:"message,omitempty"`
	// StartedAt is when the snapshots started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// CompletedAt is when the manifest was written, or the backup failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Path is the backup's location, s3://bucket/prefix/namespace/cluster/backup/.
	// +optional
	Path string `json:"path,omitempty"`
	// Bytes is the size of all shards' RDB files together.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// Shards are the snapshots, one per shard.
	// +optional
	// +listType=atomic
	Shards []BackupShard `json:"shards,omitempty"`
	// Conditions: Complete.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ValkeyBackup is one backup of a ValkeyCluster to object storage: a
// snapshot (RDB) of every shard and a manifest, written last.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=vkb
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.bytes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ValkeyBackupSpec   `json:"spec"`
	Status ValkeyBackupStatus `json:"status,omitempty"`
}

// ValkeyBackupList contains a list of ValkeyBackup.
// +kubebuilder:object:root=true
type ValkeyBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyBackup{}, &ValkeyBackupList{})
}
