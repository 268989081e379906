package v1alpha1_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func podSpec(fields string) string { return configManifest("  pod:\n" + fields) }

func TestPodSettingsAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "every field", manifest: podSpec(`    tolerations:
    - {key: pool, operator: Equal, value: cache, effect: NoSchedule}
    - {key: spot, operator: Exists}
    - {operator: Exists, effect: NoExecute, tolerationSeconds: 30}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{key: disk, operator: In, values: [ssd]}]
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: batch}}}
    priorityClassName: cache-critical
    imagePullSecrets: [{name: mirror-creds}]
    labels: {team: payments, cost-center: "4711", example.com/tier: gold}
    annotations: {example.com/owner: payments}
    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: example.com/rack, whenUnsatisfiable: ScheduleAnyway}
    nodeSelector: {pool: cache}
`)},
		{name: "operator's name label", manifest: podSpec("    labels: {app.kubernetes.io/name: mine}\n"),
			want: []string{"spec.pod.labels", "are the operator's"}},
		{name: "operator's instance label", manifest: podSpec("    labels: {app.kubernetes.io/instance: other}\n"),
			want: []string{"are the operator's"}},
		{name: "operator's managed-by label", manifest: podSpec("    labels: {app.kubernetes.io/managed-by: helm}\n"),
			want: []string{"are the operator's"}},
		{name: "shard index label", manifest: podSpec("    labels: {valkey.gomomento.com/shard-index: \"0\"}\n"),
			want: []string{"are the operator's"}},
		{name: "label key with a space", manifest: podSpec("    labels: {\"bad key\": x}\n"),
			want: []string{"spec.pod.labels: keys must be valid label keys"}},
		{name: "label name too long", manifest: podSpec("    labels: {" + strings.Repeat("a", 64) + ": x}\n"),
			want: []string{"spec.pod.labels: keys must be valid label keys"}},
		{name: "label value too long", manifest: podSpec("    labels: {team: " + strings.Repeat("a", 64) + "}\n"),
			want: []string{"spec.pod.labels.team", "may not be more than 63"}},
		{name: "label value with a slash", manifest: podSpec("    labels: {team: a/b}\n"),
			want: []string{"spec.pod.labels.team", "should match"}},
		{name: "empty label value", manifest: podSpec("    labels: {team: \"\"}\n")},
		{name: "reserved annotation", manifest: podSpec("    annotations: {valkey.gomomento.com/paused: \"true\"}\n"),
			want: []string{"spec.pod.annotations", "reserved for the operator"}},
		{name: "annotation key with a space", manifest: podSpec("    annotations: {\"bad key\": x}\n"),
			want: []string{"spec.pod.annotations: keys must be valid annotation keys"}},
		{name: "priority class in upper case", manifest: podSpec("    priorityClassName: Critical\n"),
			want: []string{"spec.pod.priorityClassName", "must be a DNS subdomain name"}},
		{name: "priority class too long", manifest: podSpec("    priorityClassName: " + strings.Repeat("a", 254) + "\n"),
			want: []string{"spec.pod.priorityClassName", "253"}},
		{name: "pull secret with a bad name", manifest: podSpec("    imagePullSecrets: [{name: My_Secret}]\n"),
			want: []string{"spec.pod.imagePullSecrets[0].name", "should match"}},
		{name: "pull secret without a name", manifest: podSpec("    imagePullSecrets: [{}]\n"),
			want: []string{"spec.pod.imagePullSecrets[0].name", "Required value"}},
		{name: "toleration Exists with a value", manifest: podSpec("    tolerations: [{key: pool, operator: Exists, value: cache}]\n"),
			want: []string{"spec.pod.tolerations", "operator Exists takes no value"}},
		{name: "toleration without key or Exists", manifest: podSpec("    tolerations: [{value: cache}]\n"),
			want: []string{"without a key must have operator Exists"}},
		{name: "toleration seconds without NoExecute", manifest: podSpec("    tolerations: [{key: pool, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]\n"),
			want: []string{"tolerationSeconds applies only to effect NoExecute"}},
		{name: "too many tolerations", manifest: podSpec("    tolerations: " + repeat(33, func(int) string { return "{operator: Exists}" }) + "\n"),
			want: []string{"spec.pod.tolerations", "must have at most 32 items"}},
		{name: "spread with zero skew", manifest: podSpec("    topologySpreadConstraints: [{maxSkew: 0, topologyKey: rack, whenUnsatisfiable: DoNotSchedule}]\n"),
			want: []string{"spec.pod.topologySpreadConstraints", "maxSkew must be at least 1"}},
		{name: "spread without a key", manifest: podSpec("    topologySpreadConstraints: [{maxSkew: 1, topologyKey: \"\", whenUnsatisfiable: DoNotSchedule}]\n"),
			want: []string{"topologyKey must be set"}},
		{name: "spread with an unknown mode", manifest: podSpec("    topologySpreadConstraints: [{maxSkew: 1, topologyKey: rack, whenUnsatisfiable: Sometimes}]\n"),
			want: []string{"whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway"}},
		{name: "two spreads with one key and mode", manifest: podSpec("    topologySpreadConstraints: [{maxSkew: 1, topologyKey: rack, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: rack, whenUnsatisfiable: DoNotSchedule}]\n"),
			want: []string{"spec.pod.topologySpreadConstraints[1]", "Duplicate value"}},
		{name: "one key in both modes", manifest: podSpec("    topologySpreadConstraints: [{maxSkew: 1, topologyKey: rack, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: rack, whenUnsatisfiable: ScheduleAnyway}]\n")},
		{name: "too many node selector keys", manifest: podSpec("    nodeSelector: {" + strings.Join(func() []string {
			var kv []string
			for i := range 33 {
				kv = append(kv, "k"+strings.Repeat("x", i)+": v")
			}
			return kv
		}(), ", ") + "}\n"),
			want: []string{"spec.pod.nodeSelector", "must have at most 32 items"}},
	})
}

func TestClusterPodLabelsAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "team labels", manifest: clusterManifest("labelled", minimalSpec+"  podLabels: {team: payments}\n")},
		{name: "operator's instance label", manifest: clusterManifest("c", minimalSpec+"  podLabels: {app.kubernetes.io/instance: other}\n"),
			want: []string{"spec.podLabels", "are the operator's"}},
		{name: "reserved prefix", manifest: clusterManifest("c", minimalSpec+"  podLabels: {valkey.gomomento.com/x: \"y\"}\n"),
			want: []string{"are the operator's"}},
		{name: "bad value", manifest: clusterManifest("c", minimalSpec+"  podLabels: {team: \"-x\"}\n"),
			want: []string{"spec.podLabels.team", "should match"}},
		{name: "bad key", manifest: clusterManifest("c", minimalSpec+"  podLabels: {\"a b\": x}\n"),
			want: []string{"spec.podLabels: keys must be valid label keys"}},
	})
}

// The admission rules spell the operator's labels out; they must be exactly
// the ones the operator sets (v1alpha1.OperatorPodLabels), in both CRDs.
func TestReservedPodLabelsMatchTheOperators(t *testing.T) {
	for crd, path := range map[string][]string{
		"../../config/crd/bases/valkey.gomomento.com_valkeyconfigs.yaml":  {"spec", "pod", "labels"},
		"../../config/crd/bases/valkey.gomomento.com_valkeyclusters.yaml": {"spec", "podLabels"},
	} {
		b, err := os.ReadFile(crd)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		schema := dig(doc, "spec", "versions").([]any)[0].(map[string]any)
		node := dig(schema, "schema", "openAPIV3Schema")
		for _, p := range path {
			node = dig(node.(map[string]any), "properties", p)
		}
		var got []string
		for _, r := range dig(node.(map[string]any), "x-kubernetes-validations").([]any) {
			rule := r.(map[string]any)["rule"].(string)
			if !strings.Contains(rule, "are the operator's") && !strings.Contains(rule, "!(k in [") {
				continue
			}
			list := rule[strings.Index(rule, "[")+1 : strings.Index(rule, "]")]
			for _, k := range strings.Split(list, ",") {
				got = append(got, strings.Trim(strings.TrimSpace(k), "'"))
			}
			if !strings.Contains(rule, "k.startsWith('"+v1alpha1.ReservedPrefix+"')") {
				t.Errorf("%s: the rule does not reserve %s: %s", crd, v1alpha1.ReservedPrefix, rule)
			}
		}
		want := slices.Sorted(slices.Values(v1alpha1.OperatorPodLabels))
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the admission rule reserves %q, the operator sets %q", crd, got, want)
		}
	}
}

func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		cur = cur.(map[string]any)[k]
	}
	return cur
}
