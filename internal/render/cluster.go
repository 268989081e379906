package render

import (
	"fmt"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Cluster is the environment every object of one ValkeyCluster is rendered
// in. Inputs only some objects need (resolved settings, passwords, the
// user's TLS Secret) are arguments of those methods.
type Cluster struct {
	Cluster *v1alpha1.ValkeyCluster
	// ClusterDomain of the Kubernetes cluster; tlssecret.DefaultClusterDomain
	// when empty.
	ClusterDomain string
	// DefaultZoneSpread applies to pods whose placement does not choose;
	// bestEffort when empty.
	DefaultZoneSpread v1alpha1.ZoneSpread
	// ExporterImage runs the metrics exporter of clusters that enable it;
	// DefaultExporterImage when empty.
	ExporterImage string
}

// DefaultExporterImage is the exporter the pod's flags and the exporter's
// grants are written for: 1.45.0 is the release Debian bookworm packages,
// which the local runtime runs. Later releases take the same flags but may
// send commands the exporter's user is refused, losing those metrics.
const DefaultExporterImage = "oliver006/redis_exporter:v1.45.0"

func (c Cluster) exporterImage() string {
	if c.ExporterImage == "" {
		return DefaultExporterImage
	}
	return c.ExporterImage
}

// tls says whether the cluster's nodes are tls-only.
func (c Cluster) tls() bool { return c.Cluster.Spec.TLS != nil }

// zoneSpread is the effective strictness for a node's pod.
func (c Cluster) zoneSpread(p *v1alpha1.Placement) v1alpha1.ZoneSpread {
	switch {
	case p != nil && p.ZoneSpread != "":
		return p.ZoneSpread
	case c.DefaultZoneSpread != "":
		return c.DefaultZoneSpread
	default:
		return v1alpha1.ZoneSpreadBestEffort
	}
}

// checkNode refuses a node of another cluster: its pod would carry this
// cluster's annotations under the other's labels.
func (c Cluster) checkNode(node *v1alpha1.ValkeyNode) error {
	if node.Spec.ClusterName != c.Cluster.Name || node.Namespace != c.Cluster.Namespace {
		return fmt.Errorf("ValkeyNode %s/%s belongs to cluster %q, not %s/%s",
			node.Namespace, node.Name, node.Spec.ClusterName, c.Cluster.Namespace, c.Cluster.Name)
	}
	return nil
}
