package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyImageSpec names one allowed container image. Allowlisting is
// existence: a ValkeyConfig may only run an image some ValkeyImage names.
type ValkeyImageSpec struct {
	// Repository of the image, for example valkey/valkey.
	// +kubebuilder:validation:MinLength=1
	Repository string `json:"repository"`

	// Tag of the image, for example 8.0.1. The pod image is
	// "<repository>:<tag>", copied verbatim; the operator never contacts a registry.
	// +kubebuilder:validation:MinLength=1
	Tag string `json:"tag"`

	// Version of Valkey the image contains, as MAJOR.MINOR.PATCH and at least
	// 8.0.0. Each node's running server is checked against it once it
	// answers: a node reporting another version sets the cluster's
	// VersionMatches condition False, and no further node is created
	// until the image (or this field) is fixed.
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+\.[0-9]+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || int(self.split('.')[0]) >= 8",message="version must be at least 8.0.0"
	Version string `json:"version"`

	// Rollout paces the roll a change of this image starts across the
	// clusters that run it. Unset, one cluster rolls at a time.
	// +optional
	Rollout *RolloutPolicy `json:"rollout,omitempty"`
}

// ValkeyImageStatus reports a deletion held while the image is in use,
// and the rollout of the image's edits.
type ValkeyImageStatus struct {
	// Conditions: DeletionBlocked, present while a deletion waits for the
	// objects that use this one, its message naming them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Rollout lists the clusters rolling because of this image and any hold.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// ValkeyImage is a cluster-scoped allowlist entry for a Valkey container image.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=vki
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="Tag",type=string,JSONPath=`.spec.tag`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ValkeyImageSpec   `json:"spec"`
	Status ValkeyImageStatus `json:"status,omitempty"`
}

// ValkeyImageList is a list of ValkeyImage.
// +kubebuilder:object:root=true
type ValkeyImageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyImage `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyImage{}, &ValkeyImageList{})
}
