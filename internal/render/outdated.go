package render

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Outdated says whether an existing node must be replaced to match desired,
// and why, for the status message and the log. Only what a running node
// cannot take in place counts: image, cpu, memory, valkey settings other
// than the live ones (see SettingsChange), zones
// (as a set), nodeSelector, the config's tolerations, affinity, priority
// class, image pull secrets and spread (see podChange), the volume's class and write mode, and whether
// the pod runs the metrics exporter. The volume's size is not among them:
// a claim grows in place (VolumeSizing), and a smaller size is refused, not
// rolled.
// zoneSpread, the exporter's image, pod labels and annotations only affect pods
// created later or are patched in place (a new operator release with
// another exporter image must not roll every cluster); lifecycle is the
// node's own progress. A missing map and an empty one are the same.
func Outdated(existing, desired v1alpha1.ValkeyNodeSpec) (bool, string) {
	switch {
	case existing.Image != desired.Image:
		return true, fmt.Sprintf("image changed from %q to %q", existing.Image, desired.Image)
	case existing.CPU != desired.CPU:
		return true, fmt.Sprintf("cpu changed from %q to %q", existing.CPU, desired.CPU)
	case existing.Memory != desired.Memory:
		return true, fmt.Sprintf("memory changed from %q to %q", existing.Memory, desired.Memory)
	}
	if _, key := SettingsChange(existing.ValkeySettings, desired.ValkeySettings); key != "" {
		return true, fmt.Sprintf("valkey setting %q changed", key)
	}
	ep, dp := orEmpty(existing.Placement), orEmpty(desired.Placement)
	if !sameSet(ep.Zones, dp.Zones) {
		return true, fmt.Sprintf("zones changed from %q to %q", setOf(ep.Zones), setOf(dp.Zones))
	}
	if key, ok := firstDifference(ep.NodeSelector, dp.NodeSelector); ok {
		return true, fmt.Sprintf("nodeSelector %q changed", key)
	}
	if why, ok := podChange(existing.Pod, desired.Pod); ok {
		return true, why
	}
	if why, ok := persistenceChange(existing.Persistence, desired.Persistence); ok {
		return true, why
	}
	switch had, wants := existing.ExporterImage != "", desired.ExporterImage != ""; {
	case wants && !had:
		return true, "metrics exporter enabled"
	case had && !wants:
		return true, "metrics exporter disabled"
	}
	return false, ""
}

// podChange is a change of the config's pod settings a scheduled pod
// cannot take: the scheduler placed it under the old ones, and a pod's
// tolerations, affinity, priority, pull secrets and spread cannot be
// edited (or, for tolerations, only added to). Labels and annotations are
// applied in place, so they are not compared. A missing list and an empty
// one are the same.
func podChange(a, b *v1alpha1.NodePod) (string, bool) {
	if a == nil {
		a = &v1alpha1.NodePod{}
	}
	if b == nil {
		b = &v1alpha1.NodePod{}
	}
	same := func(x, y any) bool { return equality.Semantic.DeepEqual(x, y) }
	switch {
	case !sameList(a.Tolerations, b.Tolerations, same):
		return "tolerations changed", true
	case !same(a.Affinity, b.Affinity):
		return "affinity changed", true
	case a.PriorityClassName != b.PriorityClassName:
		return fmt.Sprintf("priorityClassName changed from %q to %q", a.PriorityClassName, b.PriorityClassName), true
	case !sameList(a.ImagePullSecrets, b.ImagePullSecrets, same):
		return "imagePullSecrets changed", true
	case !sameList(a.TopologySpreadConstraints, b.TopologySpreadConstraints, same):
		return "topologySpreadConstraints changed", true
	}
	return "", false
}

func sameList[T any](a, b []T, same func(x, y any) bool) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return same(a, b)
}

// persistenceChange is a change that needs a new claim; a size never does.
func persistenceChange(a, b *v1alpha1.NodePersistence) (string, bool) {
	switch {
	case a == nil && b == nil:
		return "", false
	case a == nil:
		return "persistence enabled", true
	case b == nil:
		return "persistence disabled", true
	case a.StorageClassName != b.StorageClassName:
		return fmt.Sprintf("storage class changed from %q to %q", a.StorageClassName, b.StorageClassName), true
	case a.Appendfsync != b.Appendfsync:
		return fmt.Sprintf("appendfsync changed from %s to %s", a.Appendfsync, b.Appendfsync), true
	}
	return "", false
}

func orEmpty(p *v1alpha1.Placement) *v1alpha1.Placement {
	if p == nil {
		return &v1alpha1.Placement{}
	}
	return p
}

// firstDifference is the smallest key whose presence or value differs.
func firstDifference(a, b map[string]string) (string, bool) {
	keys := slices.Sorted(maps.Keys(a))
	keys = append(keys, slices.Collect(maps.Keys(b))...)
	slices.Sort(keys)
	for _, k := range keys {
		va, inA := a[k]
		vb, inB := b[k]
		if inA != inB || va != vb {
			return k, true
		}
	}
	return "", false
}

func setOf(xs []string) []string {
	s := slices.Clone(xs)
	slices.Sort(s)
	return slices.Compact(s)
}

func sameSet(a, b []string) bool { return slices.Equal(setOf(a), setOf(b)) }
