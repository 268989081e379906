package render

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestNetworkPolicy(t *testing.T) {
	web := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	monitoring := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}
	sameNamespace := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	own := map[string]string{
		"app.kubernetes.io/instance":   testClusterName,
		"app.kubernetes.io/managed-by": "valkey-operator",
		"app.kubernetes.io/name":       "valkey",
	}
	port := func(p int32) networkingv1.NetworkPolicyPort {
		return tcpPorts(p)[0]
	}
	peers := networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{port(6379), port(16379)},
		From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: own}}},
	}
	operator := networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{port(6379)},
		From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": "valkey-operator"}}}},
	}
	for _, tc := range []struct {
		name     string
		spec     *v1alpha1.NetworkPolicySpec
		exporter bool
		enabled  bool
		rules    []networkingv1.NetworkPolicyIngressRule
	}{{
		name:    "unset: clients from the cluster's namespace",
		enabled: true,
		rules:   []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(6379)}, From: sameNamespace}, peers, operator},
	}, {
		name:     "exporter scraped from the cluster's namespace by default",
		spec:     &v1alpha1.NetworkPolicySpec{},
		exporter: true,
		enabled:  true,
		rules: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(6379)}, From: sameNamespace}, peers, operator,
			{Ports: []networkingv1.NetworkPolicyPort{port(9121)}, From: sameNamespace}},
	}, {
		name:     "named clients and scrapers",
		spec:     &v1alpha1.NetworkPolicySpec{Enabled: ptr.To(true), Clients: []networkingv1.NetworkPolicyPeer{web}, Scrapers: []networkingv1.NetworkPolicyPeer{monitoring}},
		exporter: true,
		enabled:  true,
		rules: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(6379)}, From: []networkingv1.NetworkPolicyPeer{web}}, peers, operator,
			{Ports: []networkingv1.NetworkPolicyPort{port(9121)}, From: []networkingv1.NetworkPolicyPeer{monitoring}}},
	}, {
		name:    "scrapers without an exporter admit nothing",
		spec:    &v1alpha1.NetworkPolicySpec{Scrapers: []networkingv1.NetworkPolicyPeer{monitoring}},
		enabled: true,
		rules:   []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(6379)}, From: sameNamespace}, peers, operator},
	}, {
		name: "disabled",
		spec: &v1alpha1.NetworkPolicySpec{Enabled: ptr.To(false)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster(true)
			c.Cluster.Spec.NetworkPolicy = tc.spec
			if got := c.NetworkPolicyEnabled(); got != tc.enabled {
				t.Fatalf("enabled %v, want %v", got, tc.enabled)
			}
			if !tc.enabled {
				return
			}
			assertEqual(t, c.NetworkPolicy(tc.exporter, "valkey-operator"), &networkingv1.NetworkPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-ingress", Namespace: testNamespace, Labels: managedLabels, OwnerReferences: clusterOwner()},
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: own},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
					Ingress:     tc.rules,
				},
			})
		})
	}
}

// The policy is only right if it selects the pods the pod renderer builds
// and admits on the ports they listen on: every port one of them serves is
// admitted by some rule, and no rule names a port none serves.
func TestNetworkPolicyMatchesRenderedPods(t *testing.T) {
	for _, tc := range []struct {
		tls, exporter bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("tls %v exporter %v", tc.tls, tc.exporter), func(t *testing.T) {
			c := testCluster(tc.tls)
			policy := c.NetworkPolicy(tc.exporter, "valkey-operator")
			selects := func(sel *metav1.LabelSelector, pod *corev1.Pod) bool {
				s, err := metav1.LabelSelectorAsSelector(sel)
				if err != nil {
					t.Fatal(err)
				}
				return s.Matches(labels.Set(pod.Labels))
			}
			for shard := range int32(3) {
				node := testNode(c, shard)
				if tc.exporter {
					node.Spec.ExporterImage = DefaultExporterImage
				}
				pod, err := c.Pod(node)
				if err != nil {
					t.Fatal(err)
				}
				if !selects(&policy.Spec.PodSelector, pod) {
					t.Fatalf("the policy's podSelector %v does not select pod labels %v", policy.Spec.PodSelector, pod.Labels)
				}
				served := map[int32]bool{}
				for _, ctr := range pod.Spec.Containers {
					for _, p := range ctr.Ports {
						served[p.ContainerPort] = true
					}
				}
				admitted := map[int32]bool{}
				fromOwnPods := map[int32]bool{}
				for _, rule := range policy.Spec.Ingress {
					for _, p := range rule.Ports {
						admitted[p.Port.IntVal] = true
						if !served[p.Port.IntVal] {
							t.Errorf("a rule admits port %d, which no container of the pod serves", p.Port.IntVal)
						}
						for _, from := range rule.From {
							if from.NamespaceSelector == nil && from.PodSelector != nil && len(from.PodSelector.MatchLabels) > 0 && selects(from.PodSelector, pod) {
								fromOwnPods[p.Port.IntVal] = true
							}
						}
					}
				}
				for p := range served {
					if !admitted[p] {
						t.Errorf("the pod serves port %d, which no rule admits", p)
					}
				}
				for _, p := range []int32{PortValkey, PortBus} {
					if !fromOwnPods[p] {
						t.Errorf("the cluster's own pods are not admitted to port %d", p)
					}
				}
				for p := range fromOwnPods {
					if !slices.Contains([]int32{PortValkey, PortBus}, p) {
						t.Errorf("the cluster's own pods are admitted to port %d, which they never use", p)
					}
				}
			}
		})
	}
}
