package render

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// containerName of the single Valkey container.
const containerName = "valkey"

// valkeyUID is the valkey user of the official images; the server runs as it
// because the command bypasses the image entrypoint that would drop root.
const valkeyUID int64 = 999

// secretFileMode lets the container user (via fsGroup) read mounted secrets
// and nobody else.
const secretFileMode int32 = 0o440

const terminationGracePeriodSeconds int64 = 30

// Pod renders a node's pod. It is created once and never updated except for
// annotations; a dead pod is replaced by a new node, never restarted.
//
// Differences from the documented operator, on purpose: the pod meets Pod
// Security "restricted" (non-root, no privilege escalation, no capabilities,
// read-only root filesystem, RuntimeDefault seccomp), mounts no service
// account token, and its liveness probe is a TCP connect on the client port
// in both modes; the documented exec PING probe of plaintext clusters would
// need the operator password in the pod spec.
func (c Cluster) Pod(node *v1alpha1.ValkeyNode) (*corev1.Pod, error) {
	if err := c.checkNode(node); err != nil {
		return nil, err
	}
	resources, err := containerResources(node.Spec.CPU, node.Spec.Memory)
	if err != nil {
		return nil, fmt.Errorf("pod of node %s/%s: %w", node.Namespace, node.Name, err)
	}
	cluster := node.Spec.ClusterName

	meta := nodeMeta(node.Name, node)
	meta.Labels = PodLabels(cluster, node.Spec.ShardIndex)
	if len(c.Cluster.Spec.PodAnnotations) > 0 {
		meta.Annotations = maps.Clone(c.Cluster.Spec.PodAnnotations)
	}

	placement := node.Spec.Placement
	if placement == nil {
		placement = &v1alpha1.Placement{}
	}

	return &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			Hostname:                      node.Name,
			Subdomain:                     ServiceName(cluster),
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To(terminationGracePeriodSeconds),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(valkeyUID),
				RunAsGroup:     ptr.To(valkeyUID),
				FSGroup:        ptr.To(valkeyUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers:                []corev1.Container{container(node, resources)},
			Volumes:                   volumes(node),
			NodeSelector:              maps.Clone(placement.NodeSelector),
			Tolerations:               tolerations(),
			Affinity:                  zoneAffinity(placement.Zones),
			TopologySpreadConstraints: spreadConstraints(cluster, c.zoneSpread(placement)),
		},
	}, nil
}

func container(node *v1alpha1.ValkeyNode, resources corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name:    containerName,
		Image:   node.Spec.Image,
		Command: []string{"valkey-server"},
		// The announce flags make peers learn the pod IP from the node
		// itself, never from a connection's source address (which on a
		// shared loopback is not the pod's). bind: see forcedAlways.
		Args: []string{
			ConfigFile,
			"--bind", "$(POD_IP)",
			"--cluster-announce-ip", "$(POD_IP)",
			"--replica-announce-ip", "$(POD_IP)",
		},
		Env: []corev1.EnvVar{
			fieldEnv("POD_IP", "status.podIP"),
			fieldEnv("POD_NAME", "metadata.name"),
			fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		},
		Ports: []corev1.ContainerPort{
			{Name: PortNameValkey, ContainerPort: PortValkey, Protocol: corev1.ProtocolTCP},
			{Name: PortNameBus, ContainerPort: PortBus, Protocol: corev1.ProtocolTCP},
		},
		Resources: resources,
		LivenessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(PortValkey)},
			},
			InitialDelaySeconds: 5,
			PeriodSeconds:       10,
			TimeoutSeconds:      2,
			FailureThreshold:    3,
		},
		VolumeMounts: volumeMounts(node),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{
		Name:      name,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}},
	}
}

// containerResources makes each set quantity both request and limit;
// nothing set gives BestEffort, as documented.
func containerResources(cpu, memory string) (corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	for name, value := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory} {
		if value == "" {
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("%s %q: %w", name, value, err)
		}
		list[name] = q
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}

func volumes(node *v1alpha1.ValkeyNode) []corev1.Volume {
	cluster := node.Spec.ClusterName
	vs := []corev1.Volume{
		{Name: volumeData, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: volumeConfig, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: NodeConfigMapName(node.Name)},
		}}},
		{Name: volumeACL, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  ACLSecretName(cluster),
			DefaultMode: ptr.To(secretFileMode),
		}}},
		// Only the config fragment: the operator password never reaches a pod.
		{Name: volumeAuth, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  OperatorAuthSecretName(cluster),
			Items:       []corev1.KeyToPath{{Key: KeyPrimaryAuth, Path: KeyPrimaryAuth}},
			DefaultMode: ptr.To(secretFileMode),
		}}},
	}
	if node.Spec.TLSSecret != "" {
		vs = append(vs, corev1.Volume{Name: volumeTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  node.Spec.TLSSecret,
			DefaultMode: ptr.To(secretFileMode),
		}}})
	}
	return vs
}

func volumeMounts(node *v1alpha1.ValkeyNode) []corev1.VolumeMount {
	ms := []corev1.VolumeMount{
		{Name: volumeData, MountPath: DataDir},
		{Name: volumeConfig, MountPath: ConfigDir, ReadOnly: true},
		{Name: volumeACL, MountPath: ACLDir, ReadOnly: true},
		{Name: volumeAuth, MountPath: AuthDir, ReadOnly: true},
	}
	if node.Spec.TLSSecret != "" {
		ms = append(ms, corev1.VolumeMount{Name: volumeTLS, MountPath: TLSDir, ReadOnly: true})
	}
	return ms
}
