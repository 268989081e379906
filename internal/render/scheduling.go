package render

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// tolerations: exactly the documented one, so arm64 nodes tainted for
// architecture can host Valkey.
func tolerations() []corev1.Toleration {
	return []corev1.Toleration{{
		Key:      corev1.LabelArchStable,
		Operator: corev1.TolerationOpEqual,
		Value:    "arm64",
		Effect:   corev1.TaintEffectNoSchedule,
	}}
}

// zoneAffinity pins pods to the chosen zones; nil without zones.
func zoneAffinity(zones []string) *corev1.Affinity {
	if len(zones) == 0 {
		return nil
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key:      corev1.LabelTopologyZone,
					Operator: corev1.NodeSelectorOpIn,
					Values:   append([]string(nil), zones...),
				}},
			}},
		},
	}}
}

// spreadConstraints keep a shard's members on different hosts and zones.
// The per-shard ones count pods of the same cluster with the same
// shard-index label (matchLabelKeys). The per-shard zone spread is always
// attached; only its strictness follows zoneSpread. The cluster-wide zone
// spread is added only with required, and stays soft because only one
// DoNotSchedule constraint per topology key is used.
func spreadConstraints(cluster string, spread v1alpha1.ZoneSpread) []corev1.TopologySpreadConstraint {
	zoneMode := corev1.ScheduleAnyway
	if spread == v1alpha1.ZoneSpreadRequired {
		zoneMode = corev1.DoNotSchedule
	}
	cs := []corev1.TopologySpreadConstraint{
		shardSpread(cluster, corev1.LabelHostname, corev1.ScheduleAnyway),
		shardSpread(cluster, corev1.LabelTopologyZone, zoneMode),
	}
	if spread == v1alpha1.ZoneSpreadRequired {
		cs = append(cs, corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: ClusterSelector(cluster)},
		})
	}
	return cs
}

func shardSpread(cluster, key string, mode corev1.UnsatisfiableConstraintAction) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{
		MaxSkew:           1,
		TopologyKey:       key,
		WhenUnsatisfiable: mode,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: ClusterSelector(cluster)},
		MatchLabelKeys:    []string{v1alpha1.LabelShardIndex},
	}
}
