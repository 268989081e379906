package autoscale

import valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"

// ClampShards bounds a shard count by the autoscaling limits.
func ClampShards(n int32, a *valkeyv1.Autoscaling) int32 {
	return max(a.MinShards, min(a.MaxShards, n))
}

// ShardTarget is the shard count the topology engine converges to:
// status.autoscaling.desiredShards while spec.autoscaling is set (bounded,
// in case the bounds changed since), spec.shards otherwise, including
// after autoscaling is removed.
func ShardTarget(vc *valkeyv1.ValkeyCluster) int32 {
	a := vc.Spec.Autoscaling
	if a == nil {
		return vc.Spec.Shards
	}
	if st := vc.Status.Autoscaling; st != nil && st.DesiredShards > 0 {
		return ClampShards(st.DesiredShards, a)
	}
	return ClampShards(vc.Spec.Shards, a)
}
