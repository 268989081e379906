package render

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// labelNamespaceName is the label the apiserver puts on every namespace,
// its own name: how a policy names one namespace.
const labelNamespaceName = "kubernetes.io/metadata.name"

// NetworkPolicyEnabled says whether the cluster has a NetworkPolicy: yes
// unless spec.networkPolicy.enabled is false.
func (c Cluster) NetworkPolicyEnabled() bool {
	np := c.Cluster.Spec.NetworkPolicy
	return np == nil || np.Enabled == nil || *np.Enabled
}

// NetworkPolicy admits to the cluster's pods only what a cluster needs; a
// pod selected by a policy refuses every connection no rule admits. The
// documented operator creates none.
//
//   - the client port to the clients spec.networkPolicy.clients names
//     (default: every pod of the cluster's namespace);
//   - the client port and the bus to the cluster's own pods: the bus for
//     gossip and failover, the client port for replication and MIGRATE;
//   - the client port to the operator's namespace, from which the
//     operator forms, heals and reloads the cluster;
//   - while the pods run the exporter (exporter), its port to the
//     scrapers spec.networkPolicy.scrapers names (default: the cluster's
//     namespace).
//
// Ingress only: Valkey pods connect out to their peers and to DNS.
func (c Cluster) NetworkPolicy(exporter bool, operatorNamespace string) *networkingv1.NetworkPolicy {
	sameNamespace := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	clients, scrapers := sameNamespace, sameNamespace
	if np := c.Cluster.Spec.NetworkPolicy; np != nil {
		if len(np.Clients) > 0 {
			clients = np.Clients
		}
		if len(np.Scrapers) > 0 {
			scrapers = np.Scrapers
		}
	}
	ownPods := &metav1.LabelSelector{MatchLabels: valkeyPodSelector(c.Cluster.Name)}
	rules := []networkingv1.NetworkPolicyIngressRule{
		{Ports: tcpPorts(PortValkey), From: clients},
		{Ports: tcpPorts(PortValkey, PortBus), From: []networkingv1.NetworkPolicyPeer{{PodSelector: ownPods}}},
		{Ports: tcpPorts(PortValkey), From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelNamespaceName: operatorNamespace}},
		}}},
	}
	if exporter {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{Ports: tcpPorts(PortExporter), From: scrapers})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: c.clusterMeta(networkPolicyName(c.Cluster.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *ownPods,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     rules,
		},
	}
}

func tcpPorts(ports ...int32) []networkingv1.NetworkPolicyPort {
	out := make([]networkingv1.NetworkPolicyPort, len(ports))
	for i, p := range ports {
		out[i] = networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))}
	}
	return out
}
