package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Service is the cluster's headless Service. It exists for DNS only: every
// pod gets {pod}.{cluster}.{namespace}.svc.{domain}. Not-ready pods are
// published because pods have no readiness probe and joining nodes must be
// resolvable by their peers.
func (c Cluster) Service() *corev1.Service {
	meta := c.clusterMeta(serviceName(c.Cluster.Name))
	meta.Labels[v1alpha1.LabelPartOf] = v1alpha1.LabelPartOfValue
	return &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 ClusterSelector(c.Cluster.Name),
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{
				servicePort(portNameValkey, PortValkey),
				servicePort(portNameBus, PortBus),
			},
		},
	}
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{
		Name:       name,
		Protocol:   corev1.ProtocolTCP,
		Port:       port,
		TargetPort: intstr.FromInt32(port),
	}
}
