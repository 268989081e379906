package resolve

import (
	"maps"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// resolvePod merges spec.pod along the chain (child to root): a list or a
// single setting is taken whole from the first config that sets it (an
// empty list set on a child clears its parent's), the maps key by key with
// a child's value winning. Nil when no config sets spec.pod.
func resolvePod(configs []*v1alpha1.ValkeyConfig) *v1alpha1.PodSettings {
	var (
		out              v1alpha1.PodSettings
		found            bool
		tol, ips, spread bool
	)
	for _, cfg := range configs {
		p := cfg.Spec.Pod
		if p == nil {
			continue
		}
		found = true
		if !tol && p.Tolerations != nil {
			out.Tolerations, tol = cloneSlice(p.Tolerations), true
		}
		if out.Affinity == nil && p.Affinity != nil {
			out.Affinity = p.Affinity.DeepCopy()
		}
		if out.PriorityClassName == "" {
			out.PriorityClassName = p.PriorityClassName
		}
		if !ips && p.ImagePullSecrets != nil {
			out.ImagePullSecrets, ips = cloneSlice(p.ImagePullSecrets), true
		}
		if !spread && p.TopologySpreadConstraints != nil {
			out.TopologySpreadConstraints, spread = cloneSlice(p.TopologySpreadConstraints), true
		}
	}
	if !found {
		return nil
	}
	// Root first, so a child's key overwrites its parent's.
	for i := len(configs) - 1; i >= 0; i-- {
		p := configs[i].Spec.Pod
		if p == nil {
			continue
		}
		out.Labels = mergeInto(out.Labels, p.Labels)
		out.Annotations = mergeInto(out.Annotations, p.Annotations)
		out.NodeSelector = mergeInto(out.NodeSelector, p.NodeSelector)
	}
	return &out
}

func mergeInto[V any](dst, src map[string]V) map[string]V {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]V, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

// cloneSlice deep-copies a list, so the result never aliases the menu.
func cloneSlice[T any, P interface {
	*T
	DeepCopyInto(*T)
}](in []T) []T {
	out := make([]T, len(in))
	for i := range in {
		P(&in[i]).DeepCopyInto(&out[i])
	}
	return out
}
