package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// NodeConfigMap holds one node's valkey.conf. It carries no credential (the
// replication password is included from the auth Secret mount).
func (c Cluster) NodeConfigMap(node *v1alpha1.ValkeyNode) (*corev1.ConfigMap, error) {
	if err := c.checkNode(node); err != nil {
		return nil, err
	}
	settings, err := c.nodeSettings(node)
	if err != nil {
		return nil, err
	}
	conf, err := valkeyConf(settings)
	if err != nil {
		return nil, fmt.Errorf("render valkey.conf of node %s/%s: %w", node.Namespace, node.Name, err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: nodeMeta(NodeConfigMapName(node.Name), node),
		Data:       map[string]string{keyValkeyConf: conf},
	}, nil
}

// nodeSettings are the node's recorded settings with the forced ones
// applied once more (cheap, and right even for a node recorded by an
// operator whose table was shorter), plus the per-node announce hostname in
// TLS mode.
func (c Cluster) nodeSettings(node *v1alpha1.ValkeyNode) (map[string]string, error) {
	tls := node.Spec.TLSSecret != ""
	settings, err := settings(node.Spec.ValkeySettings, tls, node.Spec.Persistence)
	if err != nil {
		return nil, fmt.Errorf("settings of node %s/%s: %w", node.Namespace, node.Name, err)
	}
	if tls {
		override(settings, keyAnnounceHostname, PodFQDN(node.Name, node.Spec.ClusterName, node.Namespace, c.ClusterDomain))
	}
	return settings, nil
}

// ConfDigest identifies the valkey.conf a node ConfigMap carries, so the
// node's controller can tell, without reading the ConfigMap back, whether
// the one it last wrote is still the one the node's settings render.
func ConfDigest(cm *corev1.ConfigMap) string {
	sum := sha256.Sum256([]byte(cm.Data[keyValkeyConf]))
	return hex.EncodeToString(sum[:8])
}
