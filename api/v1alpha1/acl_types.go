package v1alpha1

// AclBinding grants one Valkey user the permissions of one or more roles on
// the keys and channels it names. No field accepts a plaintext password.
type AclBinding struct {
	// Username of the Valkey user. The prefix _momento_ is reserved for the
	// operator's system users.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9_-]+$')",message="username must match ^[a-zA-Z0-9_-]+$"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('_momento_')",message="username prefix _momento_ is reserved for system users"
	Username string `json:"username"`

	// PasswordHashes are SHA-256 digests of the accepted passwords, as 64
	// lowercase hex characters without the '#' prefix. Two hashes let a
	// password rotate without downtime.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	PasswordHashes []PasswordHash `json:"passwordHashes"`

	// Permissions of the user. The first entry gives the user's root rules;
	// each further entry becomes a Valkey ACL selector.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Permissions []Permission `json:"permissions"`
}

// PasswordHash is a SHA-256 digest: 64 lowercase hex characters.
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{64}$')",message="password hash must be 64 lowercase hex characters (a SHA-256 digest without the '#' prefix)"
type PasswordHash string

// Permission applies a ValkeyRole's command rules to the given keys and channels.
type Permission struct {
	// RoleRef is the name of a ValkeyRole.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	RoleRef string `json:"roleRef"`

	// Keys the rules apply to. There is no implicit "all keys": an empty list
	// grants access to no key.
	// +kubebuilder:validation:MaxItems=16
	Keys []KeyPattern `json:"keys"`

	// Channels are Pub/Sub channel patterns, without the '&' prefix. Omitted
	// means no channel access.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Channels []ChannelPattern `json:"channels,omitempty"`
}

// ChannelPattern is a Pub/Sub channel glob.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=128
// +kubebuilder:validation:XValidation:rule="!self.matches('[\\\\p{Cc}\\\\p{Z}\"\\']')",message="channel pattern must not contain control characters, whitespace or quotes"
// +kubebuilder:validation:XValidation:rule="!self.endsWith(')')",message="channel pattern must not end with ')', which would end an ACL selector early; write a final ')' as [)]"
type ChannelPattern string

// KeyAccess says whether a key pattern is readable, writable or both.
// +kubebuilder:validation:Enum=read;write;readwrite
type KeyAccess string

const (
	KeyAccessRead      KeyAccess = "read"
	KeyAccessWrite     KeyAccess = "write"
	KeyAccessReadWrite KeyAccess = "readwrite"
)

// KeyPattern is a key glob and the access it grants.
type KeyPattern struct {
	// Pattern is a key glob, without the '~' prefix.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.matches('[\\\\p{Cc}\\\\p{Z}\"\\']')",message="key pattern must not contain control characters, whitespace or quotes"
	// +kubebuilder:validation:XValidation:rule="!self.endsWith(')')",message="key pattern must not end with ')', which would end an ACL selector early; write a final ')' as [)]"
	Pattern string `json:"pattern"`

	// Access granted on matching keys.
	// +optional
	// +kubebuilder:default=readwrite
	Access KeyAccess `json:"access,omitempty"`
}
