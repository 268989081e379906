package render

import (
	"fmt"
	"maps"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A restore loads each shard's file into a scratch server of its own (a
// loader), not in cluster mode, fed by the operator as its primary; the
// keys are then copied to the cluster. Loaders live for one shard's
// restore.

// RestoreLoaderName is the loader of a backup's shard i.
func RestoreLoaderName(cluster string, shard int) string {
	return cluster + "-restore-" + strconv.Itoa(shard)
}

// RestoreLoaderSecretName holds the loaders' configuration: their password.
func RestoreLoaderSecretName(cluster string) string { return cluster + "-restore-loader" }

// Keys of the loaders' Secret: the configuration file the loaders mount,
// and the password in it, which the operator reads.
const (
	KeyLoaderConf     = "loader.conf"
	KeyLoaderPassword = "password"
)

const (
	loaderConfDir = "/etc/valkey/loader"
	volumeLoader  = "loader"
)

// RestoreLoaderSecret is the loaders' configuration: only requirepass, so
// that the password is never on a command line or in the pod spec.
func (c Cluster) RestoreLoaderSecret(password string) *corev1.Secret {
	meta := c.loaderMeta(RestoreLoaderSecretName(c.Cluster.Name))
	return &corev1.Secret{
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			KeyLoaderConf:     fmt.Appendf(nil, "requirepass %s\n", password),
			KeyLoaderPassword: []byte(password),
		},
	}
}

// RestoreLoaderPod is shard i's loader. It runs the image, resources and
// placement of node, one of the cluster's nodes, so that it can hold what
// one of them holds. It keeps nothing on disk: the file is loaded from the
// replication stream (repl-diskless-load on-empty-db) and nothing is saved.
func (c Cluster) RestoreLoaderPod(shard int, node *v1alpha1.ValkeyNode) (*corev1.Pod, error) {
	if err := c.checkNode(node); err != nil {
		return nil, err
	}
	resources, err := containerResources(node.Spec.CPU, node.Spec.Memory)
	if err != nil {
		return nil, fmt.Errorf("restore loader of shard %d: %w", shard, err)
	}
	placement := node.Spec.Placement
	if placement == nil {
		placement = &v1alpha1.Placement{}
	}
	meta := c.loaderMeta(RestoreLoaderName(c.Cluster.Name, shard))
	return &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To(int64(5)),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			SecurityContext:               restrictedPod(),
			Containers: []corev1.Container{{
				Name:    ContainerValkey,
				Image:   node.Spec.Image,
				Command: []string{"valkey-server"},
				Args: []string{
					path.Join(loaderConfDir, KeyLoaderConf),
					"--bind", "$(POD_IP)",
					"--port", strconv.Itoa(int(PortValkey)),
					"--protected-mode", "no",
					"--save", "",
					"--appendonly", "no",
					"--repl-diskless-load", "on-empty-db",
					"--dir", dataDir,
				},
				Env:       []corev1.EnvVar{fieldEnv("POD_IP", "status.podIP")},
				Ports:     []corev1.ContainerPort{{Name: portNameValkey, ContainerPort: PortValkey, Protocol: corev1.ProtocolTCP}},
				Resources: resources,
				VolumeMounts: []corev1.VolumeMount{
					{Name: volumeData, MountPath: dataDir},
					{Name: volumeLoader, MountPath: loaderConfDir, ReadOnly: true},
				},
				SecurityContext: restrictedContainer(),
			}},
			Volumes: []corev1.Volume{
				{Name: volumeData, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: volumeLoader, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName:  RestoreLoaderSecretName(c.Cluster.Name),
					Items:       []corev1.KeyToPath{{Key: KeyLoaderConf, Path: KeyLoaderConf}},
					DefaultMode: ptr.To(secretFileMode),
				}}},
			},
			NodeSelector: maps.Clone(placement.NodeSelector),
			Tolerations:  tolerations(),
		},
	}, nil
}

// loaderMeta: owned by the cluster, so deleting it collects the loaders;
// managed-by, so the operator's cache sees them; no instance label.
func (c Cluster) loaderMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: c.Cluster.Namespace,
		Labels: map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.LabelManagedByValue,
			v1alpha1.LabelRestoreOf: c.Cluster.Name,
		},
		OwnerReferences: controllerRef(kindCluster, c.Cluster),
	}
}
