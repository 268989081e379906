package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyMeteringRecordSpec names the metered cluster. The UID tells a
// cluster from a later one of the same name: each gets its own record.
type ValkeyMeteringRecordSpec struct {
	// ClusterNamespace and ClusterName locate the metered ValkeyCluster.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterNamespace is immutable"
	ClusterNamespace string `json:"clusterNamespace"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName"`
	// ClusterUID is the metered cluster's metadata.uid.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterUID is immutable"
	ClusterUID string `json:"clusterUID"`
}

// MeteringSource is where a node's provisioned memory figure came from,
// first match wins: Reserved, MaxMemory, Observed, then Floor.
type MeteringSource string

const (
	// MeteringSourceReserved: the container memory (resources.memory).
	MeteringSourceReserved MeteringSource = "Reserved"
	// MeteringSourceMaxMemory: no container memory limit, but maxmemory set.
	MeteringSourceMaxMemory MeteringSource = "MaxMemory"
	// MeteringSourceObserved: neither set; the node's peak used memory.
	MeteringSourceObserved MeteringSource = "Observed"
	// MeteringSourceFloor: the figure was under the 100 MB floor, or the
	// node had no measurement yet.
	MeteringSourceFloor MeteringSource = "Floor"
)

// ValkeyMeteringRecordStatus is the meter.
type ValkeyMeteringRecordStatus struct {
	// MegabyteSeconds is the exact accumulator: provisioned megabytes
	// (10^6 bytes) times the seconds they were provisioned for.
	// +optional
	MegabyteSeconds int64 `json:"megabyteSeconds,omitempty"`
	// RemainderByteMillis is the part of the accumulator below one
	// megabyte-second, in byte-milliseconds, carried so that sampling
	// often or rarely bills exactly the same.
	// +optional
	RemainderByteMillis int64 `json:"remainderByteMillis,omitempty"`
	// GBHours is MegabyteSeconds in gigabyte (10^9 bytes) hours, to six
	// decimals: the billing figure.
	// +optional
	GBHours string `json:"gbHours,omitempty"`
	// Since is the first sample.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// LastSample is when the accumulator was last advanced.
	// +optional
	LastSample *metav1.Time `json:"lastSample,omitempty"`
	// ProvisionedBytes is the cluster's provisioned memory at the last
	// sample; it is what the time until the next sample is billed at.
	// +optional
	ProvisionedBytes int64 `json:"provisionedBytes,omitempty"`
	// Nodes counts the nodes metered at the last sample, and Sources how
	// many of them each source decided.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// +optional
	Sources map[MeteringSource]int32 `json:"sources,omitempty"`
	// ClusterDeleted is when the operator found the cluster gone; the
	// record stops accumulating then and stays until released.
	// +optional
	ClusterDeleted *metav1.Time `json:"clusterDeleted,omitempty"`
}

// ValkeyMeteringRecord accumulates one ValkeyCluster's provisioned memory
// in GB-hours. It lives in the operator's namespace, survives its cluster,
// and goes only once annotated valkey.gomomento.com/release=true.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=vkmr
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.clusterNamespace`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="GB-Hours",type=string,JSONPath=`.status.gbHours`
// +kubebuilder:printcolumn:name="Provisioned",type=integer,JSONPath=`.status.provisionedBytes`
// +kubebuilder:printcolumn:name="Deleted",type=date,JSONPath=`.status.clusterDeleted`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyMeteringRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ValkeyMeteringRecordSpec   `json:"spec"`
	Status ValkeyMeteringRecordStatus `json:"status,omitempty"`
}

// ValkeyMeteringRecordList contains a list of ValkeyMeteringRecord.
// +kubebuilder:object:root=true
type ValkeyMeteringRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyMeteringRecord `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyMeteringRecord{}, &ValkeyMeteringRecordList{})
}
