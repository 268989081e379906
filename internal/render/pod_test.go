package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// wantPod is the plaintext pod of testNode at shard 1 with no placement.
func wantPod() *corev1.Pod {
	secretMode := ptr.To[int32](0o440)
	quantities := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("500m"),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
	}
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	instance := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": testClusterName}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      testNodeName,
			Namespace: testNamespace,
			Labels: map[string]string{
				"app.kubernetes.io/name":           "valkey",
				"app.kubernetes.io/instance":       testClusterName,
				"app.kubernetes.io/managed-by":     "valkey-operator",
				"valkey.gomomento.com/shard-index": "1",
			},
			Annotations:     map[string]string{"example.com/team": "batch"},
			OwnerReferences: nodeOwner(),
		},
		Spec: corev1.PodSpec{
			Hostname:                      testNodeName,
			Subdomain:                     testClusterName,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](999),
				RunAsGroup:     ptr.To[int64](999),
				FSGroup:        ptr.To[int64](999),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "valkey.gomomento.com/synced"}},
			Containers: []corev1.Container{{
				Name:    "valkey",
				Image:   "valkey/valkey:8.0.1",
				Command: []string{"valkey-server"},
				Args: []string{
					"/etc/valkey/conf/valkey.conf",
					"--bind", "$(POD_IP)",
					"--cluster-announce-ip", "$(POD_IP)",
					"--replica-announce-ip", "$(POD_IP)",
				},
				Env: []corev1.EnvVar{
					field("POD_IP", "status.podIP"),
					field("POD_NAME", "metadata.name"),
					field("POD_NAMESPACE", "metadata.namespace"),
				},
				Ports: []corev1.ContainerPort{
					{Name: "valkey", ContainerPort: 6379, Protocol: corev1.ProtocolTCP},
					{Name: "valkey-bus", ContainerPort: 16379, Protocol: corev1.ProtocolTCP},
				},
				Resources: corev1.ResourceRequirements{Requests: quantities, Limits: quantities},
				// 8.0.1 with a replica per shard: held for the operator's hand-over.
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 10}}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/var/lib/valkey"},
					{Name: "config", MountPath: "/etc/valkey/conf", ReadOnly: true},
					{Name: "acl", MountPath: "/etc/valkey/acl", ReadOnly: true},
					{Name: "auth", MountPath: "/etc/valkey/auth", ReadOnly: true},
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "my-cluster-1a4f2-config"},
				}}},
				{Name: "acl", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "my-cluster-acl", DefaultMode: secretMode,
				}}},
				{Name: "auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "my-cluster-operator-auth", DefaultMode: secretMode,
					Items: []corev1.KeyToPath{{Key: "primaryauth.conf", Path: "primaryauth.conf"}},
				}}},
			},
			Tolerations: []corev1.Toleration{{
				Key: "kubernetes.io/arch", Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectNoSchedule,
			}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
				{
					MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
					LabelSelector: instance, MatchLabelKeys: []string{"valkey.gomomento.com/shard-index"},
				},
				{
					MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
					LabelSelector: instance, MatchLabelKeys: []string{"valkey.gomomento.com/shard-index"},
				},
			},
		},
	}
}

// wantExporter is the exporter container of testNode, plaintext.
func wantExporter() corev1.Container {
	q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	return corev1.Container{
		Name:  "exporter",
		Image: "oliver006/redis_exporter:v1.45.0",
		Args: []string{
			"--redis.addr=redis://$(POD_IP):6379",
			"--redis.user=_momento_exporter",
			"--web.listen-address=$(POD_IP):9121",
			"--config-command=INFO",
			"--set-client-name=false",
			"--connection-timeout=5s",
		},
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			// A reference only: the password is never in the pod spec.
			{Name: "REDIS_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "my-cluster-operator-auth"}, Key: "exporter-password",
			}}},
		},
		Ports:     []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9121, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{Requests: q, Limits: q},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

func TestPod(t *testing.T) {
	instance := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": testClusterName}}
	clusterZoneSpread := corev1.TopologySpreadConstraint{
		MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: instance,
	}

	tests := []struct {
		name          string
		tls           bool
		placement     *v1alpha1.Placement
		defaultSpread v1alpha1.ZoneSpread
		annotations   map[string]string
		cpu, memory   string
		exporter      bool
		want          func(p *corev1.Pod)
	}{
		{name: "plaintext", want: func(*corev1.Pod) {}},
		{
			name: "tls mounts the node's TLS Secret",
			tls:  true,
			want: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/etc/valkey/tls", ReadOnly: true})
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "my-cluster-node-tls", DefaultMode: ptr.To[int32](0o440),
				}}})
			},
		},
		{
			name:      "zones, node selector, zoneSpread required",
			placement: &v1alpha1.Placement{Zones: []string{"us-east-1a", "us-east-1b"}, ZoneSpread: v1alpha1.ZoneSpreadRequired, NodeSelector: map[string]string{"pool": "valkey"}},
			want: func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{"pool": "valkey"}
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a", "us-east-1b"},
						}},
					}}},
				}}
				p.Spec.TopologySpreadConstraints[1].WhenUnsatisfiable = corev1.DoNotSchedule
				p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, clusterZoneSpread)
			},
		},
		{
			name:          "the operator default applies when placement does not choose",
			defaultSpread: v1alpha1.ZoneSpreadRequired,
			want: func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints[1].WhenUnsatisfiable = corev1.DoNotSchedule
				p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, clusterZoneSpread)
			},
		},
		{
			name:          "placement bestEffort beats a required default",
			placement:     &v1alpha1.Placement{ZoneSpread: v1alpha1.ZoneSpreadBestEffort},
			defaultSpread: v1alpha1.ZoneSpreadRequired,
			want:          func(*corev1.Pod) {},
		},
		{
			name:        "no annotations, no resources",
			annotations: map[string]string{},
			cpu:         "-", memory: "-",
			want: func(p *corev1.Pod) {
				p.Annotations = nil
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
			},
		},
		{
			name:     "exporter, plaintext",
			exporter: true,
			want: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, wantExporter())
			},
		},
		{
			name:     "exporter, tls: verifies the pod's name against the CA, and sees no key",
			tls:      true,
			exporter: true,
			want: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/etc/valkey/tls", ReadOnly: true})
				e := wantExporter()
				e.Args[0] = "--redis.addr=rediss://my-cluster-1a4f2.my-cluster.my-app.svc.cluster.local:6379"
				e.Args = append(e.Args, "--tls-ca-cert-file=/etc/valkey/exporter-tls/ca.crt")
				e.VolumeMounts = []corev1.VolumeMount{{Name: "exporter-ca", MountPath: "/etc/valkey/exporter-tls", ReadOnly: true}}
				p.Spec.Containers = append(p.Spec.Containers, e)
				p.Spec.Volumes = append(p.Spec.Volumes,
					corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: "my-cluster-node-tls", DefaultMode: ptr.To[int32](0o440),
					}}},
					corev1.Volume{Name: "exporter-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: "my-cluster-node-tls", DefaultMode: ptr.To[int32](0o440),
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
					}}})
			},
		},
		{
			name:   "memory only",
			cpu:    "-",
			memory: "2Gi",
			want: func(p *corev1.Pod) {
				q := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: q, Limits: q}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCluster(tt.tls)
			c.Cluster.Spec.Placement = tt.placement
			c.DefaultZoneSpread = tt.defaultSpread
			if tt.annotations != nil {
				c.Cluster.Spec.PodAnnotations = tt.annotations
			}
			node := testNode(c, 1)
			if tt.exporter {
				node.Spec.ExporterImage = DefaultExporterImage
			}
			for dst, v := range map[*string]string{&node.Spec.CPU: tt.cpu, &node.Spec.Memory: tt.memory} {
				switch v {
				case "":
				case "-":
					*dst = ""
				default:
					*dst = v
				}
			}
			got, err := c.Pod(node)
			if err != nil {
				t.Fatal(err)
			}
			want := wantPod()
			tt.want(want)
			assertEqual(t, got, want)
		})
	}
}

func TestPodRefusesABadQuantity(t *testing.T) {
	c := testCluster(false)
	node := testNode(c, 0)
	node.Spec.CPU = "lots"
	if _, err := c.Pod(node); err == nil {
		t.Fatal("want an error")
	}
}

func TestPodDoesNotAliasTheCluster(t *testing.T) {
	c := testCluster(false)
	c.Cluster.Spec.Placement = &v1alpha1.Placement{NodeSelector: map[string]string{"a": "b"}}
	node := testNode(c, 0)
	pod, err := c.Pod(node)
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations["x"] = "y"
	pod.Spec.NodeSelector["a"] = "changed"
	if _, ok := c.Cluster.Spec.PodAnnotations["x"]; ok || node.Spec.Placement.NodeSelector["a"] != "b" {
		t.Fatal("the pod shares maps with its inputs")
	}
}
