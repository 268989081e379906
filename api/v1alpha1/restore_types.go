package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterRestore fills a new cluster with a backup's keys. It is read when
// the cluster is created and cannot be added, changed or removed later.
// The cluster's shape need not be the backup's: every key lands on the
// shard that owns its slot in the new cluster.
// +kubebuilder:validation:XValidation:rule="has(self.backupName) != has(self.source)",message="name exactly one of backupName and source"
type ClusterRestore struct {
	// BackupName is a Completed ValkeyBackup in the cluster's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	BackupName string `json:"backupName,omitempty"`
	// Source is a backup written elsewhere (by another Kubernetes cluster,
	// for example), found by its store and path.
	// +optional
	Source *RestoreSource `json:"source,omitempty"`
}

// RestoreSource is a backup found by its location rather than by a
// ValkeyBackup of this Kubernetes cluster.
type RestoreSource struct {
	// Store is the bucket the backup is in, as a ValkeyBackup's
	// destination names it; its prefix is not used (path says where).
	Store BackupDestination `json:"store"`
	// Path is the backup's folder in the bucket: status.path of the
	// ValkeyBackup that wrote it, without s3://<bucket>/, such as
	// prod/cache/nightly-20261205/.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="path must not start with /"
	Path string `json:"path"`
}

// RestorePhase is where a restore is; Completed and Failed are final.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type RestorePhase string

const (
	// RestorePending: the cluster is still forming, or the backup is not
	// found or not Completed yet.
	RestorePending RestorePhase = "Pending"
	// RestoreRunning: shards' files are being loaded and their keys copied.
	RestoreRunning RestorePhase = "Running"
	// RestoreCompleted: every shard's keys are in the cluster.
	RestoreCompleted RestorePhase = "Completed"
	// RestoreFailed: the restore cannot go on (a corrupt file, a cluster
	// that already holds keys, a backup of a newer Valkey); message says
	// why. The cluster keeps what it holds and stays not Ready.
	RestoreFailed RestorePhase = "Failed"
)

// RestoreStatus is the progress of spec.restore.
type RestoreStatus struct {
	// Phase: Pending, Running, Completed or Failed.
	Phase RestorePhase `json:"phase"`
	// Message says what the restore waits for, is doing or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
	// Backup is where the backup's manifest was read.
	// +optional
	Backup string `json:"backup,omitempty"`
	// ShardsTotal is how many shards the backup has; ShardsDone how many
	// of them have all their keys in the cluster.
	// +optional
	ShardsTotal int32 `json:"shardsTotal,omitempty"`
	// +optional
	ShardsDone int32 `json:"shardsDone,omitempty"`
	// Keys counts the keys written so far.
	// +optional
	Keys int64 `json:"keys,omitempty"`
	// StartedAt is when the first shard's file was opened.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// CompletedAt is when the last shard's keys were written, or the
	// restore failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}
