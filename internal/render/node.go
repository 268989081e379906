package render

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// NodeSpec is the spec every new node of the cluster gets at shard index
// shard; compare it with existing nodes through Outdated.
func (c Cluster) NodeSpec(r *resolve.Result, shard int32) (v1alpha1.ValkeyNodeSpec, error) {
	persistence := nodePersistence(r.Persistence)
	settings, err := nodeSettings(r.Valkey, c.tls(), persistence, r.Memory)
	if err != nil {
		return v1alpha1.ValkeyNodeSpec{}, fmt.Errorf("settings of cluster %s/%s: %w", c.Cluster.Namespace, c.Cluster.Name, err)
	}
	withSigtermFailover(settings, r.Version)
	spec := v1alpha1.ValkeyNodeSpec{
		ClusterName:    c.Cluster.Name,
		Image:          r.Image,
		CPU:            r.CPU,
		Memory:         r.Memory,
		ValkeySettings: settings,
		ShardIndex:     shard,
		Placement:      nodePlacement(c.Cluster.Spec.Placement, r.Pod),
		Pod:            nodePod(r.Pod),
		Persistence:    persistence,
		Lifecycle:      v1alpha1.LifecycleJoining,
	}
	if c.tls() {
		spec.TLSSecret = NodeTLSSecretName(c.Cluster.Name)
	}
	if r.Exporter {
		spec.ExporterImage = c.exporterImage()
	}
	return spec, nil
}

// Node is a new ValkeyNode called name (see NewNodeName). joinType is one of
// the v1alpha1.JoinType* values, or empty for a node of the initial
// bootstrap, which carries no join-type label.
func (c Cluster) Node(name string, r *resolve.Result, shard int32, joinType string) (*v1alpha1.ValkeyNode, error) {
	spec, err := c.NodeSpec(r, shard)
	if err != nil {
		return nil, err
	}
	return c.NodeOf(name, spec, joinType), nil
}

// NodeOf is a new ValkeyNode called name with spec as it is: a node
// rendered already, or one whose rendering is kept while the config it
// came from cannot be read.
func (c Cluster) NodeOf(name string, spec v1alpha1.ValkeyNodeSpec, joinType string) *v1alpha1.ValkeyNode {
	meta := c.clusterMeta(name)
	if joinType != "" {
		meta.Labels[v1alpha1.LabelJoinType] = joinType
	}
	meta.Finalizers = []string{v1alpha1.FinalizerNode}
	return &v1alpha1.ValkeyNode{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kindNode},
		ObjectMeta: meta,
		Spec:       spec,
	}
}
