package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyScheduledBackupSpec says which cluster to back up, when, where to,
// and how many of its backups to keep.
type ValkeyScheduledBackupSpec struct {
	// Cluster is the name of the ValkeyCluster, in the schedule's
	// namespace.
	// +kubebuilder:validation:MinLength=1
	Cluster string `json:"cluster"`
	// Schedule is a cron expression in UTC: five fields (minute, hour,
	// day of month, month, day of week), or six with a leading seconds
	// field. The operator checks it and reports a bad one in the
	// ScheduleValid condition.
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`
	// Destination is the bucket each backup is written to, as in a
	// ValkeyBackup.
	Destination BackupDestination `json:"destination"`
	// Retention prunes old backups, their objects first; without it every
	// backup is kept.
	// +optional
	Retention *BackupRetention `json:"retention,omitempty"`
	// Suspend stops new backups; retention still applies.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// BackupRetention is how many of a schedule's backups are kept. The newest
// Completed backup and any backup still Pending or Running are never
// pruned.
// +kubebuilder:validation:XValidation:rule="has(self.keepLast) || has(self.maxAge)",message="retention needs keepLast, maxAge or both"
type BackupRetention struct {
	// KeepLast keeps this many of the newest Completed backups.
	// +optional
	// +kubebuilder:validation:Minimum=1
	KeepLast *int32 `json:"keepLast,omitempty"`
	// MaxAge prunes a backup once it is older than this, such as "168h".
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// ValkeyScheduledBackupStatus is what the operator reports of a schedule.
type ValkeyScheduledBackupStatus struct {
	// LastScheduleTime is the due time of the last backup created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is the next due time; absent while the schedule is
	// suspended or invalid.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastBackupName is the ValkeyBackup created last.
	// +optional
	LastBackupName string `json:"lastBackupName,omitempty"`
	// LastSuccessfulBackup is the newest Completed ValkeyBackup of the
	// schedule.
	// +optional
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`
	// Conditions: ScheduleValid, RetentionApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ValkeyScheduledBackup takes a ValkeyBackup of a cluster at each time its
// cron schedule names and prunes the old ones. Each backup is named
// <schedule>-<due time, UTC> and owned by the schedule: deleting the
// schedule deletes its ValkeyBackups, not their objects.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=vksb
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="name must be at most 63 characters: it labels the schedule's backups"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Last Backup",type=string,JSONPath=`.status.lastBackupName`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyScheduledBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ValkeyScheduledBackupSpec   `json:"spec"`
	Status ValkeyScheduledBackupStatus `json:"status,omitempty"`
}

// ValkeyScheduledBackupList contains a list of ValkeyScheduledBackup.
// +kubebuilder:object:root=true
type ValkeyScheduledBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyScheduledBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyScheduledBackup{}, &ValkeyScheduledBackupList{})
}
