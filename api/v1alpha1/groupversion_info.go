// Package v1alpha1 holds the valkey.gomomento.com/v1alpha1 API: the platform
// team's menu (ValkeyImage, ValkeyConfig, ValkeyRole), the product team's
// request (ValkeyCluster) and the operator's record of each member
// (ValkeyNode). Every admission rule lives here as a marker or a CEL rule so
// the API server enforces it without a webhook.
// +kubebuilder:object:generate=true
// +groupName=valkey.gomomento.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "valkey.gomomento.com", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
