package v1alpha1

// ZoneSpread is how strictly a shard's members are spread across zones.
// +kubebuilder:validation:Enum=bestEffort;required
type ZoneSpread string

const (
	ZoneSpreadBestEffort ZoneSpread = "bestEffort"
	ZoneSpreadRequired   ZoneSpread = "required"
)

// Placement says where a cluster's pods may run.
type Placement struct {
	// Zones the pods must run in (required node affinity on
	// topology.kubernetes.io/zone). Compared as a set: order is irrelevant.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Zones []string `json:"zones,omitempty"`

	// ZoneSpread is the strictness of the per-shard zone spread; the
	// operator's default applies when unset. Affects only pods created later.
	// +optional
	ZoneSpread ZoneSpread `json:"zoneSpread,omitempty"`

	// NodeSelector is copied verbatim to every pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}
