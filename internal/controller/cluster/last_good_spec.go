package cluster

import (
	"maps"
	"slices"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// lastGoodSpecs gives each shard the spec of the newest member that is
// neither leaving nor being deleted: the rendering the cluster runs, kept
// while the config it came from cannot be read or rendered. A replacement
// made from it is a copy of what already serves, so nothing is held
// because a reference broke, and nothing rolls either: every member
// matches it, or is being rolled towards it already.
func lastGoodSpecs(nodes map[string]*valkeyv1.ValkeyNode) (func(shard int32) (valkeyv1.ValkeyNodeSpec, error), bool) {
	var pick *valkeyv1.ValkeyNode
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[name]
		if !n.DeletionTimestamp.IsZero() || n.Spec.Lifecycle == valkeyv1.LifecycleLeaving {
			continue
		}
		if pick == nil || n.CreationTimestamp.After(pick.CreationTimestamp.Time) {
			pick = n
		}
	}
	if pick == nil {
		return nil, false
	}
	return func(shard int32) (valkeyv1.ValkeyNodeSpec, error) {
		spec := *pick.Spec.DeepCopy()
		spec.ShardIndex = shard
		spec.Lifecycle = valkeyv1.LifecycleJoining
		return spec, nil
	}, true
}
