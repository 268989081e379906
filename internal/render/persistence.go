package render

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// nodePersistence is what a node records of the resolved persistence; nil
// keeps the node in memory only.
func nodePersistence(p *v1alpha1.Persistence) *v1alpha1.NodePersistence {
	if p == nil {
		return nil
	}
	mode := p.Appendfsync
	if mode == "" {
		mode = v1alpha1.AppendFsyncEverysec
	}
	return &v1alpha1.NodePersistence{Size: p.Size.DeepCopy(), StorageClassName: p.StorageClassName, Appendfsync: mode}
}

// NodeClaim is a persistent node's PersistentVolumeClaim, owned by the
// node so that it goes when the node is retired and stays while the node
// exists, whatever happens to its pods. nil for a node in memory only.
func (c Cluster) NodeClaim(node *v1alpha1.ValkeyNode) (*corev1.PersistentVolumeClaim, error) {
	if err := c.checkNode(node); err != nil {
		return nil, err
	}
	p := node.Spec.Persistence
	if p == nil {
		return nil, nil
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: nodeMeta(NodeClaimName(node.Name), node),
		Spec: corev1.PersistentVolumeClaimSpec{
			// One node, one writer: the claim is mounted by one pod only.
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: p.Size.DeepCopy()},
			},
		},
	}
	if p.StorageClassName != "" {
		pvc.Spec.StorageClassName = &p.StorageClassName
	}
	return pvc, nil
}

// dataVolume is where the node's data directory lives: its claim when it
// is persistent, else an emptyDir that goes with the pod.
func dataVolume(node *v1alpha1.ValkeyNode) corev1.VolumeSource {
	if node.Spec.Persistence == nil {
		return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: NodeClaimName(node.Name)}}
}

// restartPolicy: a node in memory only has nothing to come back with, so
// its process is never restarted and a crash loses the node. A persistent
// node's process restarts in place on the same volume and reloads its
// append-only file and nodes.conf: the same node, with its keys.
func restartPolicy(node *v1alpha1.ValkeyNode) corev1.RestartPolicy {
	if node.Spec.Persistence == nil {
		return corev1.RestartPolicyNever
	}
	return corev1.RestartPolicyOnFailure
}
