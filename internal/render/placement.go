package render

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// nodePod is the snapshot of the resolved spec.pod a new node records; nil
// when no config sets one.
func nodePod(p *v1alpha1.PodSettings) *v1alpha1.NodePod {
	if p == nil {
		return nil
	}
	out := &v1alpha1.NodePod{
		Labels:            v1alpha1.LabelMap(p.Labels),
		Annotations:       maps.Clone(p.Annotations),
		PriorityClassName: p.PriorityClassName,
		Affinity:          p.Affinity.DeepCopy(),
	}
	for i := range p.Tolerations {
		out.Tolerations = append(out.Tolerations, *p.Tolerations[i].DeepCopy())
	}
	for _, s := range p.ImagePullSecrets {
		out.ImagePullSecrets = append(out.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
	}
	for i := range p.TopologySpreadConstraints {
		out.TopologySpreadConstraints = append(out.TopologySpreadConstraints, *p.TopologySpreadConstraints[i].DeepCopy())
	}
	return out
}

// nodePlacement is the cluster's placement with the config's nodeSelector
// under it: the cluster's keys narrow the config's, and a key the cluster
// gives another value keeps the config's (see PlacementConflicts).
func nodePlacement(cluster *v1alpha1.Placement, pod *v1alpha1.PodSettings) *v1alpha1.Placement {
	if pod == nil || len(pod.NodeSelector) == 0 {
		return cluster.DeepCopy()
	}
	out := cluster.DeepCopy()
	if out == nil {
		out = &v1alpha1.Placement{}
	}
	sel := maps.Clone(out.NodeSelector)
	if sel == nil {
		sel = map[string]string{}
	}
	maps.Copy(sel, pod.NodeSelector)
	out.NodeSelector = sel
	return out
}

// PodMetadata is what a pod carries beyond the operator's own labels: the
// config's labels and annotations (pod), then the cluster's, which win key
// by key. The operator's labels are set over these by the caller.
func (c Cluster) PodMetadata(labels, annotations map[string]string) (map[string]string, map[string]string) {
	l := maps.Clone(labels)
	l = mergeMaps(l, v1alpha1.LabelMap(c.Cluster.Spec.PodLabels))
	a := maps.Clone(annotations)
	a = mergeMaps(a, c.Cluster.Spec.PodAnnotations)
	return l, a
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

// podTolerations are the operator's toleration and the config's.
func podTolerations(p *v1alpha1.NodePod) []corev1.Toleration {
	out := tolerations()
	if p != nil {
		for i := range p.Tolerations {
			out = append(out, *p.Tolerations[i].DeepCopy())
		}
	}
	return out
}

// podAffinity is the config's affinity with the cluster's zones added to
// its required node affinity: both must hold, so the zone requirement
// joins every one of the config's terms (terms are alternatives).
func podAffinity(zones []string, p *v1alpha1.NodePod) *corev1.Affinity {
	zone := zoneAffinity(zones)
	if p == nil || p.Affinity == nil {
		return zone
	}
	out := p.Affinity.DeepCopy()
	if zone == nil {
		return out
	}
	zoneReq := zone.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = zone.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		return out
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchExpressions = append(req.NodeSelectorTerms[i].MatchExpressions, *zoneReq.DeepCopy())
	}
	return out
}

// podSpread is the operator's spread followed by the config's. A config
// constraint without a labelSelector counts the cluster's own pods (a
// config serves many clusters, so it cannot name one). A config constraint
// with the topology key and whenUnsatisfiable of one of the operator's is
// left out: a pod may not carry two such (the apiserver refuses it), and
// the operator's keeps each shard's members apart. PlacementConflicts
// reports it.
func podSpread(cluster string, spread v1alpha1.ZoneSpread, p *v1alpha1.NodePod) []corev1.TopologySpreadConstraint {
	out := spreadConstraints(cluster, spread)
	if p == nil {
		return out
	}
	own := len(out)
	for i := range p.TopologySpreadConstraints {
		tc := *p.TopologySpreadConstraints[i].DeepCopy()
		if slices.ContainsFunc(out[:own], func(o corev1.TopologySpreadConstraint) bool { return sameSpreadKey(o, tc) }) {
			continue
		}
		if tc.LabelSelector == nil {
			tc.LabelSelector = &metav1.LabelSelector{MatchLabels: ClusterSelector(cluster)}
		}
		out = append(out, tc)
	}
	return out
}

func sameSpreadKey(a, b corev1.TopologySpreadConstraint) bool {
	return a.TopologyKey == b.TopologyKey && a.WhenUnsatisfiable == b.WhenUnsatisfiable
}

// PlacementConflicts are the settings of the resolved spec.pod and the
// cluster that cannot both be applied, each saying which one is kept; the
// cluster reports them (PlacementApplied) rather than dropping one
// silently.
func (c Cluster) PlacementConflicts(p *v1alpha1.PodSettings) []string {
	if p == nil {
		return nil
	}
	var out []string
	var clusterSel map[string]string
	if c.Cluster.Spec.Placement != nil {
		clusterSel = c.Cluster.Spec.Placement.NodeSelector
	}
	for _, k := range slices.Sorted(maps.Keys(clusterSel)) {
		if v, ok := p.NodeSelector[k]; ok && v != clusterSel[k] {
			out = append(out, fmt.Sprintf("spec.placement.nodeSelector %s=%s contradicts the config's %s=%s, which is kept (a cluster may only narrow its config's nodeSelector)",
				k, clusterSel[k], k, v))
		}
	}
	var zone v1alpha1.ZoneSpread
	if c.Cluster.Spec.Placement != nil {
		zone = c.Cluster.Spec.Placement.ZoneSpread
	}
	own := spreadConstraints(c.Cluster.Name, c.zoneSpread(&v1alpha1.Placement{ZoneSpread: zone}))
	for i, tc := range p.TopologySpreadConstraints {
		if slices.ContainsFunc(own, func(o corev1.TopologySpreadConstraint) bool { return sameSpreadKey(o, tc) }) {
			out = append(out, fmt.Sprintf("spec.pod.topologySpreadConstraints[%d] (topologyKey %s, whenUnsatisfiable %s) repeats the operator's per-shard spread, which is kept (a pod may carry one constraint per key and mode)",
				i, tc.TopologyKey, tc.WhenUnsatisfiable))
		}
	}
	return out
}

func priorityClassName(p *v1alpha1.NodePod) string {
	if p == nil {
		return ""
	}
	return p.PriorityClassName
}

func imagePullSecrets(p *v1alpha1.NodePod) []corev1.LocalObjectReference {
	if p == nil || len(p.ImagePullSecrets) == 0 {
		return nil
	}
	return slices.Clone(p.ImagePullSecrets)
}
