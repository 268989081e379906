package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuleAccess allows or denies a category or command.
// +kubebuilder:validation:Enum=allow;deny
type RuleAccess string

const (
	RuleAllow RuleAccess = "allow"
	RuleDeny  RuleAccess = "deny"
)

// CategoryRule allows or denies a Valkey ACL category.
type CategoryRule struct {
	// Name of the category without the '@' prefix, for example read, write, admin.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z][a-zA-Z0-9_-]*$')",message="category name must match ^[a-zA-Z][a-zA-Z0-9_-]*$ (no '@' prefix)"
	Name string `json:"name"`

	// Access to the category.
	Access RuleAccess `json:"access"`
}

// CommandRule allows or denies a command, or one subcommand of it.
type CommandRule struct {
	// Name of the command, for example get, cluster, flushall.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z][a-zA-Z0-9_-]*$')",message="command name must match ^[a-zA-Z][a-zA-Z0-9_-]*$"
	Name string `json:"name"`

	// Subcommand, for example info in cluster|info.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z][a-zA-Z0-9_-]*$')",message="subcommand must match ^[a-zA-Z][a-zA-Z0-9_-]*$"
	Subcommand string `json:"subcommand,omitempty"`

	// Access to the command.
	Access RuleAccess `json:"access"`
}

// ValkeyRoleSpec holds command-level rules only; identities, passwords, keys
// and channels live in the bindings that reference the role.
type ValkeyRoleSpec struct {
	// Categories, rendered before commands, each in list order.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Categories []CategoryRule `json:"categories,omitempty"`

	// Commands, rendered after categories, each in list order.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Commands []CommandRule `json:"commands,omitempty"`
}

// ValkeyRoleStatus reports a deletion held while the role is in use.
type ValkeyRoleStatus struct {
	// Conditions: DeletionBlocked, present while a deletion waits for the
	// objects that use this one, its message naming them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ValkeyRole is a cluster-scoped permission template for ACL bindings.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=vkr
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyRole struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   ValkeyRoleSpec   `json:"spec,omitempty"`
	Status ValkeyRoleStatus `json:"status,omitempty"`
}

// ValkeyRoleList is a list of ValkeyRole.
// +kubebuilder:object:root=true
type ValkeyRoleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyRole `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyRole{}, &ValkeyRoleList{})
}
