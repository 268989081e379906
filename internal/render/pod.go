package render

import (
	"fmt"
	"maps"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Container names. The Valkey container's exit loses the node; the
// exporter's only loses its metrics.
const (
	ContainerValkey   = "valkey"
	ContainerExporter = "exporter"
)

// valkeyUID is the valkey user of the official images; the server runs as it
// because the command bypasses the image entrypoint that would drop root.
const valkeyUID int64 = 999

// secretFileMode lets the container user (via fsGroup) read mounted secrets
// and nobody else.
const secretFileMode int32 = 0o440

const terminationGracePeriodSeconds int64 = 30

// preStopHoldSeconds keeps a stopping pod's Valkey serving before it gets
// SIGTERM: the operator sees the pod terminating and, if it is a primary,
// sends CLUSTER FAILOVER to its best in-sync replica, which takes well
// under a second once the replica has caught up; by SIGTERM the node is a
// replica and its exit costs clients nothing. The hold is bounded to a
// third of the grace period so that the server's own shutdown still fits in
// it; every such pod pays it when deleted, so it is rendered only where a
// replica could take over.
const preStopHoldSeconds int64 = 10

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
	var own, ownAnnotations map[string]string
	if p := node.Spec.Pod; p != nil {
		own, ownAnnotations = p.Labels, p.Annotations
	}
	// The operator's labels last: admission refuses them in the user's,
	// and the operator finds its pods by them.
	meta.Labels, meta.Annotations = c.PodMetadata(own, ownAnnotations)
	meta.Labels = mergeMaps(meta.Labels, PodLabels(cluster, node.Spec.ShardIndex))

	placement := node.Spec.Placement
	if placement == nil {
		placement = &v1alpha1.Placement{}
	}
	containers := []corev1.Container{container(node, resources)}
	if c.Cluster.Spec.ReplicasPerShard > 0 {
		containers[0].Lifecycle = &corev1.Lifecycle{
			PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: preStopHoldSeconds}},
		}
	}
	if node.Spec.ExporterImage != "" {
		containers = append(containers, c.exporterContainer(node))
	}

	return &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			Hostname:                      node.Name,
			Subdomain:                     serviceName(cluster),
			RestartPolicy:                 restartPolicy(node),
			TerminationGracePeriodSeconds: ptr.To(terminationGracePeriodSeconds),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			SecurityContext:               restrictedPod(),
			Containers:                    containers,
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: v1alpha1.ConditionSynced}},
			Volumes:                       volumes(node),
			NodeSelector:                  maps.Clone(placement.NodeSelector),
			Tolerations:                   podTolerations(node.Spec.Pod),
			Affinity:                      podAffinity(placement.Zones, node.Spec.Pod),
			TopologySpreadConstraints:     podSpread(cluster, c.zoneSpread(placement), node.Spec.Pod),
			PriorityClassName:             priorityClassName(node.Spec.Pod),
			ImagePullSecrets:              imagePullSecrets(node.Spec.Pod),
		},
	}, nil
}

// restrictedPod and restrictedContainer meet Pod Security "restricted":
// the valkey user, no privilege escalation, no capabilities, a read-only
// root filesystem, the runtime's default seccomp profile.
func restrictedPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(valkeyUID),
		RunAsGroup:     ptr.To(valkeyUID),
		FSGroup:        ptr.To(valkeyUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func container(node *v1alpha1.ValkeyNode, resources corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name:    ContainerValkey,
		Image:   node.Spec.Image,
		Command: []string{"valkey-server"},
		// The announce flags make peers learn the pod IP from the node
		// itself, never from a connection's source address (which on a
		// shared loopback is not the pod's). bind: see forcedAlways.
		Args: []string{
			configFile,
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
			{Name: portNameValkey, ContainerPort: PortValkey, Protocol: corev1.ProtocolTCP},
			{Name: portNameBus, ContainerPort: PortBus, Protocol: corev1.ProtocolTCP},
		},
		Resources: resources,
		// No liveness probe: with restartPolicy Never a failed probe is the
		// loss of the node, and a primary without a replica holds the only
		// copy of its keys. A stalled process (a long fork, throttled CPU,
		// a full accept backlog under reconnecting clients) fails any
		// probe yet is alive; Valkey's own failure detection over the
		// cluster bus promotes a replica when one exists, and the operator
		// replaces only a process that is gone.
		VolumeMounts:    volumeMounts(node),
		SecurityContext: restrictedContainer(),
	}
}

// exporterResources are small and fixed: without key checks the exporter
// holds one scrape's INFO at a time. Requests equal limits so that a pod
// whose Valkey container is Guaranteed stays Guaranteed.
var exporterResources = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("64Mi"),
}

// exporterPasswordEnv is where redis_exporter reads its password. Its
// --redis.password-file is a JSON map keyed by the exact address scraped,
// which differs per pod, so a key of the cluster's Secret can only reach it
// as this variable.
const exporterPasswordEnv = "REDIS_PASSWORD"

// exporterContainer runs redis_exporter against this pod's Valkey only, as
// ExporterUser. It has no probe: with restartPolicy Never a probe failure
// would kill it for good, and a dead exporter shows as a failed scrape and
// in ContainersHealthy, never as a lost node.
func (c Cluster) exporterContainer(node *v1alpha1.ValkeyNode) corev1.Container {
	port := strconv.Itoa(int(PortValkey))
	addr := "redis://" + net.JoinHostPort("$(POD_IP)", port)
	var tlsArgs []string
	var mounts []corev1.VolumeMount
	if node.Spec.TLSSecret != "" {
		// The certificate names the pod's DNS name, not its IP; the kubelet
		// writes that name into the pod's own /etc/hosts.
		addr = "rediss://" + net.JoinHostPort(PodFQDN(node.Name, node.Spec.ClusterName, node.Namespace, c.ClusterDomain), port)
		tlsArgs = []string{"--tls-ca-cert-file=" + exporterCAFile}
		mounts = []corev1.VolumeMount{{Name: volumeExporterCA, MountPath: exporterTLSDir, ReadOnly: true}}
	}
	args := []string{
		"--redis.addr=" + addr,
		"--redis.user=" + ExporterUser,
		// The pod IP, like Valkey's bind, never a wildcard: see forcedAlways.
		"--web.listen-address=" + net.JoinHostPort("$(POD_IP)", strconv.Itoa(int(PortExporter))),
		// CONFIG GET is not granted (it returns primaryauth); asked
		// "INFO GET *" instead, Valkey answers with nothing rather than a
		// refusal that would count as an error and an ACL LOG entry on
		// every scrape. maxmemory still comes from INFO.
		"--config-command=INFO",
		// CLIENT SETNAME is not granted either; ACL LOG and CLIENT LIST
		// name the user.
		"--set-client-name=false",
		// Below Prometheus' default scrape timeout, so a node that does not
		// answer shows as redis_up 0 instead of a failed scrape.
		"--connection-timeout=5s",
	}
	return corev1.Container{
		Name:  ContainerExporter,
		Image: node.Spec.ExporterImage,
		Args:  append(args, tlsArgs...),
		Env: []corev1.EnvVar{
			fieldEnv("POD_IP", "status.podIP"),
			{Name: exporterPasswordEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: OperatorAuthSecretName(node.Spec.ClusterName)},
				Key:                  KeyExporterPassword,
			}}},
		},
		Ports:           []corev1.ContainerPort{{Name: PortNameExporter, ContainerPort: PortExporter, Protocol: corev1.ProtocolTCP}},
		Resources:       corev1.ResourceRequirements{Requests: exporterResources, Limits: exporterResources.DeepCopy()},
		VolumeMounts:    mounts,
		SecurityContext: restrictedContainer(),
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
		{Name: volumeData, VolumeSource: dataVolume(node)},
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
		if node.Spec.ExporterImage != "" {
			vs = append(vs, corev1.Volume{Name: volumeExporterCA, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName:  node.Spec.TLSSecret,
				Items:       []corev1.KeyToPath{{Key: keyTLSCA, Path: keyTLSCA}},
				DefaultMode: ptr.To(secretFileMode),
			}}})
		}
	}
	return vs
}

func volumeMounts(node *v1alpha1.ValkeyNode) []corev1.VolumeMount {
	ms := []corev1.VolumeMount{
		{Name: volumeData, MountPath: dataDir},
		{Name: volumeConfig, MountPath: configDir, ReadOnly: true},
		{Name: volumeACL, MountPath: aclDir, ReadOnly: true},
		{Name: volumeAuth, MountPath: authDir, ReadOnly: true},
	}
	if node.Spec.TLSSecret != "" {
		ms = append(ms, corev1.VolumeMount{Name: volumeTLS, MountPath: tlsDir, ReadOnly: true})
	}
	return ms
}
