package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultMaxConcurrentClusters is how many clusters may roll at once
// because of one ValkeyImage or ValkeyConfig when its spec sets no rollout
// policy: one, so an edit of a shared object never replaces every
// cluster's nodes at once.
const DefaultMaxConcurrentClusters = 1

// RolloutPolicy paces the roll an edit of a shared ValkeyImage or
// ValkeyConfig starts in every ValkeyCluster that uses it. Only the roll
// (replacing outdated nodes) waits for its turn; healing, failovers and
// scaling never do.
type RolloutPolicy struct {
	// MaxConcurrentClusters is how many clusters may be rolling at once
	// because of this object. Unset means DefaultMaxConcurrentClusters (1).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxConcurrentClusters *int32 `json:"maxConcurrentClusters,omitempty"`

	// Canary selects ValkeyClusters (by their labels) that roll before any
	// other: the rest wait until every selected cluster runs the current
	// spec. Unset, no cluster goes first.
	// +optional
	Canary *metav1.LabelSelector `json:"canary,omitempty"`
}

// MaxConcurrent is MaxConcurrentClusters with its default.
func (p *RolloutPolicy) MaxConcurrent() int {
	if p == nil || p.MaxConcurrentClusters == nil || *p.MaxConcurrentClusters < 1 {
		return DefaultMaxConcurrentClusters
	}
	return int(*p.MaxConcurrentClusters)
}

// RolloutStatus is the rollout an object's edits are under: the clusters
// holding its slots, and the hold a failed roll put on the others.
type RolloutStatus struct {
	// Rolling are the clusters holding a rollout slot: they may replace
	// outdated nodes. A slot is taken with an optimistically locked write
	// of this status, so two clusters deciding at once cannot both take
	// the last one.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Rolling []RolloutSlot `json:"rolling,omitempty"`

	// Hold, while set for the object's current generation, keeps every
	// cluster that is not rolling yet from starting: a rolling cluster
	// reported ActionFailed or DataLost. Editing the spec (a new
	// generation) or the AnnotationRolloutRelease annotation releases it.
	// +optional
	Hold *RolloutHold `json:"hold,omitempty"`

	// ReleasedGeneration is the generation whose hold was released by
	// AnnotationRolloutRelease: no new hold is taken for it.
	// +optional
	ReleasedGeneration int64 `json:"releasedGeneration,omitempty"`
}

// RolloutSlot is one cluster holding a rollout slot.
type RolloutSlot struct {
	// Cluster is "namespace/name".
	Cluster string `json:"cluster"`
	// Since is when the cluster took the slot: a DataLost record older
	// than that is not this roll's.
	Since metav1.Time `json:"since"`
	// Generation of the object when the cluster took the slot. Only a
	// failure of a cluster that took its slot for the current generation
	// holds the others: a fix must not be held by what the edit it
	// replaces broke.
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// RolloutHold is why the object's rollout is held.
type RolloutHold struct {
	// Generation of the object the hold applies to.
	Generation int64 `json:"generation"`
	// Message names the failed cluster and its failure.
	Message string `json:"message"`
}

// RolledOut is one ValkeyImage or ValkeyConfig generation every node of a
// cluster runs.
type RolledOut struct {
	// Kind is ValkeyImage or ValkeyConfig.
	Kind string `json:"kind"`
	// Name of the object.
	Name string `json:"name"`
	// Generation of the object the nodes run.
	Generation int64 `json:"generation"`
}
