package render

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

var cachePool = corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule}

func placedPod(t *testing.T, c Cluster, pod *v1alpha1.PodSettings) *corev1.Pod {
	t.Helper()
	r := *testResolved
	r.Pod = pod
	node, err := c.Node(testNodeName, &r, 1, v1alpha1.JoinTypeReplica)
	if err != nil {
		t.Fatal(err)
	}
	node.UID = testNodeUID
	p, err := c.Pod(node)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPodPlacement(t *testing.T) {
	rack := corev1.TopologySpreadConstraint{MaxSkew: 2, TopologyKey: "example.com/rack", WhenUnsatisfiable: corev1.DoNotSchedule}
	disk := corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}
	zoneIn := func(zones ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}
	}
	required := func(terms ...[]corev1.NodeSelectorRequirement) *corev1.NodeSelector {
		ns := &corev1.NodeSelector{}
		for _, t := range terms {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		return ns
	}
	for _, tc := range []struct {
		name    string
		cluster func(*v1alpha1.ValkeyClusterSpec)
		pod     *v1alpha1.PodSettings
		check   func(t *testing.T, p *corev1.Pod)
	}{
		{name: "no settings keep the operator's", check: func(t *testing.T, p *corev1.Pod) {
			if len(p.Spec.Tolerations) != 1 || p.Spec.Affinity != nil || p.Spec.PriorityClassName != "" || p.Spec.ImagePullSecrets != nil || len(p.Spec.TopologySpreadConstraints) != 2 {
				t.Errorf("pod spec changed without settings: %+v", p.Spec)
			}
		}},
		{name: "tolerations follow the operator's", pod: &v1alpha1.PodSettings{Tolerations: []corev1.Toleration{cachePool}},
			check: func(t *testing.T, p *corev1.Pod) {
				if want := append(tolerations(), cachePool); !reflect.DeepEqual(p.Spec.Tolerations, want) {
					t.Errorf("tolerations %+v, want %+v", p.Spec.Tolerations, want)
				}
			}},
		{name: "priority and pull secrets", pod: &v1alpha1.PodSettings{PriorityClassName: "cache-critical", ImagePullSecrets: []v1alpha1.PullSecretRef{{Name: "mirror"}}},
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Spec.PriorityClassName != "cache-critical" || !reflect.DeepEqual(p.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "mirror"}}) {
					t.Errorf("priority %q, pull secrets %+v", p.Spec.PriorityClassName, p.Spec.ImagePullSecrets)
				}
			}},
		{name: "zones join every required term of the config's affinity",
			cluster: func(s *v1alpha1.ValkeyClusterSpec) { s.Placement = &v1alpha1.Placement{Zones: []string{"a"}} },
			pod: &v1alpha1.PodSettings{Affinity: &corev1.Affinity{
				NodeAffinity:    &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required([]corev1.NodeSelectorRequirement{disk}, nil)},
				PodAntiAffinity: &corev1.PodAntiAffinity{},
			}},
			check: func(t *testing.T, p *corev1.Pod) {
				want := required([]corev1.NodeSelectorRequirement{disk, zoneIn("a")}, []corev1.NodeSelectorRequirement{zoneIn("a")})
				if got := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; !reflect.DeepEqual(got, want) {
					t.Errorf("required node affinity %+v, want %+v", got, want)
				}
				if p.Spec.Affinity.PodAntiAffinity == nil {
					t.Error("the config's pod anti-affinity was dropped")
				}
			}},
		{name: "zones alone with an affinity that has no node part",
			cluster: func(s *v1alpha1.ValkeyClusterSpec) { s.Placement = &v1alpha1.Placement{Zones: []string{"b"}} },
			pod:     &v1alpha1.PodSettings{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}},
			check: func(t *testing.T, p *corev1.Pod) {
				if got := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; !reflect.DeepEqual(got, required([]corev1.NodeSelectorRequirement{zoneIn("b")})) {
					t.Errorf("required node affinity %+v", got)
				}
			}},
		{name: "spread composes, a selector-less constraint counts the cluster's pods",
			pod: &v1alpha1.PodSettings{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{rack}},
			check: func(t *testing.T, p *corev1.Pod) {
				got := p.Spec.TopologySpreadConstraints
				want := rack
				want.LabelSelector = &metav1.LabelSelector{MatchLabels: ClusterSelector(testClusterName)}
				if len(got) != 3 || !reflect.DeepEqual(got[2], want) {
					t.Errorf("spread %+v, want the operator's two and %+v", got, want)
				}
			}},
		{name: "a constraint repeating the operator's key and mode is left out",
			pod: &v1alpha1.PodSettings{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
				{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway},
				{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule},
			}},
			check: func(t *testing.T, p *corev1.Pod) {
				got := p.Spec.TopologySpreadConstraints
				if len(got) != 3 || got[0].MaxSkew != 1 || got[2].WhenUnsatisfiable != corev1.DoNotSchedule {
					t.Errorf("spread %+v", got)
				}
			}},
		{name: "labels and annotations: config, then cluster, then the operator's",
			cluster: func(s *v1alpha1.ValkeyClusterSpec) {
				s.PodLabels = map[string]v1alpha1.LabelValue{"team": "payments"}
				s.PodAnnotations = map[string]string{"example.com/owner": "cluster"}
			},
			pod: &v1alpha1.PodSettings{
				Labels:      map[string]v1alpha1.LabelValue{"team": "platform", "cost-center": "4711"},
				Annotations: map[string]string{"example.com/owner": "config", "example.com/tier": "gold"},
			},
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Labels["team"] != "payments" || p.Labels["cost-center"] != "4711" || p.Labels[v1alpha1.LabelInstance] != testClusterName {
					t.Errorf("labels %v", p.Labels)
				}
				if p.Annotations["example.com/owner"] != "cluster" || p.Annotations["example.com/tier"] != "gold" {
					t.Errorf("annotations %v", p.Annotations)
				}
			}},
		{name: "the cluster's nodeSelector narrows the config's and cannot change it",
			cluster: func(s *v1alpha1.ValkeyClusterSpec) {
				s.Placement = &v1alpha1.Placement{NodeSelector: map[string]string{"pool": "batch", "disk": "ssd"}}
			},
			pod: &v1alpha1.PodSettings{NodeSelector: map[string]string{"pool": "cache"}},
			check: func(t *testing.T, p *corev1.Pod) {
				if want := map[string]string{"pool": "cache", "disk": "ssd"}; !reflect.DeepEqual(p.Spec.NodeSelector, want) {
					t.Errorf("nodeSelector %v, want %v", p.Spec.NodeSelector, want)
				}
			}},
		{name: "the operator's security context, probes and hook stay",
			pod: &v1alpha1.PodSettings{Tolerations: []corev1.Toleration{cachePool}, PriorityClassName: "x"},
			check: func(t *testing.T, p *corev1.Pod) {
				want := wantPod()
				if !reflect.DeepEqual(p.Spec.SecurityContext, want.Spec.SecurityContext) ||
					!reflect.DeepEqual(p.Spec.Containers[0].SecurityContext, want.Spec.Containers[0].SecurityContext) ||
					!reflect.DeepEqual(p.Spec.Containers[0].Lifecycle, want.Spec.Containers[0].Lifecycle) ||
					!reflect.DeepEqual(p.Spec.Containers[0].ReadinessProbe, want.Spec.Containers[0].ReadinessProbe) {
					t.Error("pod settings changed the operator's security context, probe or hook")
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster(false)
			if tc.cluster != nil {
				tc.cluster(&c.Cluster.Spec)
			}
			tc.check(t, placedPod(t, c, tc.pod))
		})
	}
}

func TestPlacementConflicts(t *testing.T) {
	c := testCluster(false)
	c.Cluster.Spec.Placement = &v1alpha1.Placement{NodeSelector: map[string]string{"pool": "batch", "disk": "ssd"}}
	got := c.PlacementConflicts(&v1alpha1.PodSettings{
		NodeSelector: map[string]string{"pool": "cache", "disk": "ssd"},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "example.com/rack", WhenUnsatisfiable: corev1.DoNotSchedule},
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway},
		},
	})
	if len(got) != 2 || !strings.Contains(got[0], "spec.placement.nodeSelector pool=batch contradicts the config's pool=cache") ||
		!strings.Contains(got[1], "spec.pod.topologySpreadConstraints[1] (topologyKey topology.kubernetes.io/zone, whenUnsatisfiable ScheduleAnyway)") {
		t.Errorf("conflicts %q", got)
	}
	if got := c.PlacementConflicts(&v1alpha1.PodSettings{NodeSelector: map[string]string{"disk": "ssd"}}); got != nil {
		t.Errorf("agreeing settings reported: %q", got)
	}
	// With required zone spread the operator's zone constraint is
	// DoNotSchedule, so a ScheduleAnyway one on the zone repeats its
	// cluster-wide spread instead.
	c.Cluster.Spec.Placement.ZoneSpread = v1alpha1.ZoneSpreadRequired
	if got := c.PlacementConflicts(&v1alpha1.PodSettings{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule},
	}}); len(got) != 1 {
		t.Errorf("conflicts with required zone spread %q", got)
	}
}

func TestOutdatedPodSettings(t *testing.T) {
	base := func() v1alpha1.ValkeyNodeSpec {
		return v1alpha1.ValkeyNodeSpec{ClusterName: "c", Image: "valkey/valkey:8.0.1", Pod: &v1alpha1.NodePod{
			Tolerations: []corev1.Toleration{cachePool},
			Labels:      map[string]string{"team": "a"},
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(p *v1alpha1.NodePod)
		want   string
	}{
		{name: "labels in place", change: func(p *v1alpha1.NodePod) { p.Labels["team"] = "b" }},
		{name: "annotations in place", change: func(p *v1alpha1.NodePod) { p.Annotations = map[string]string{"x": "y"} }},
		{name: "tolerations roll", change: func(p *v1alpha1.NodePod) { p.Tolerations[0].Value = "other" }, want: "tolerations changed"},
		{name: "tolerations removed roll", change: func(p *v1alpha1.NodePod) { p.Tolerations = nil }, want: "tolerations changed"},
		{name: "affinity rolls", change: func(p *v1alpha1.NodePod) { p.Affinity = &corev1.Affinity{} }, want: "affinity changed"},
		{name: "priority rolls", change: func(p *v1alpha1.NodePod) { p.PriorityClassName = "high" }, want: `priorityClassName changed from "" to "high"`},
		{name: "pull secrets roll", change: func(p *v1alpha1.NodePod) {
			p.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mirror"}}
		}, want: "imagePullSecrets changed"},
		{name: "spread rolls", change: func(p *v1alpha1.NodePod) {
			p.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "rack"}}
		}, want: "topologySpreadConstraints changed"},
		{name: "an empty list is no list", change: func(p *v1alpha1.NodePod) { p.ImagePullSecrets = []corev1.LocalObjectReference{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desired := base()
			tc.change(desired.Pod)
			got, why := Outdated(base(), desired)
			if got != (tc.want != "") || why != tc.want {
				t.Errorf("Outdated = %v %q, want %q", got, why, tc.want)
			}
		})
	}
	// A node from before spec.pod existed is not outdated by a config
	// without one.
	if got, why := Outdated(v1alpha1.ValkeyNodeSpec{Image: "x"}, v1alpha1.ValkeyNodeSpec{Image: "x", Pod: &v1alpha1.NodePod{Labels: map[string]string{"a": "b"}}}); got {
		t.Errorf("outdated without a scheduling change: %s", why)
	}
}
