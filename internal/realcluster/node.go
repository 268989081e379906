package realcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/nodeimages"
	"github.com/gomomento/valkey-operator/internal/realnode"
)

// startNode starts the control plane and the node, the storage, imports
// the images the operator's pods, the clients' pods and the chart's
// Deployment run, and returns the operator's.
func (c *Cluster) startNode(ctx context.Context) (string, error) {
	dir := c.opts.Dir
	kc, err := realnode.NewKubeletClient(filepath.Join(dir, "kubelet-client"))
	if err != nil {
		return "", err
	}
	nodeIP, err := realnode.DefaultNodeIP()
	if err != nil {
		return "", err
	}
	clusterDomain := controller.DefaultOptions().ClusterDomain
	// No CRDs: the chart installs them, from its crds/.
	cp, err := localkube.StartControlPlane(ctx, localkube.ControlPlaneOptions{
		Dir:                     filepath.Join(dir, "cp"),
		ServiceAccountAdmission: true,
		APIServerArgs:           kc.APIServerArgs(),
		ControllerManagerArgs:   []string{"--flex-volume-plugin-dir=" + filepath.Join(dir, "cp", "flex")},
		// Pods reach the apiserver through the `kubernetes` Service, as an
		// operator pod's in-cluster configuration does.
		PodNetwork: &localkube.PodNetwork{Address: nodeIP.String(), ClusterDomain: clusterDomain},
	})
	if err != nil {
		return "", fmt.Errorf("control plane: %w", err)
	}
	c.ControlPlane = cp
	c.stops = append(c.stops, func() {
		if err := cp.Stop(); err != nil {
			c.opts.Warn(fmt.Errorf("stopping the control plane: %w", err))
		}
	})
	c.opts.Logf("control plane up")

	node, err := realnode.Start(ctx, realnode.Options{
		Config:          cp.Config,
		Users:           cp.Env,
		Dir:             filepath.Join(dir, "node"),
		KubeletClientCA: filepath.Join(dir, "kubelet-client", "kubelet-client-ca.crt"),
		NodeIP:          nodeIP.String(),
		// The domain the operator names pods under: the kubelet writes the
		// pod's name in it into the pod's /etc/hosts, and the node's
		// CoreDNS serves it.
		ClusterDomain: clusterDomain,
		DNS:           true,
		Services:      true,
	})
	if err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	c.Node = node
	c.stops = append(c.stops, func() {
		if err := node.Stop(); err != nil {
			c.opts.Warn(fmt.Errorf("stopping the node: %w", err))
		}
	})
	c.opts.Logf("node %s Ready (bridge %s, pod subnet %s, cluster DNS %s)", node.Name, node.Bridge, node.PodSubnet, node.DNS)
	if err := c.startStorage(ctx, filepath.Join(dir, "volumes")); err != nil {
		return "", err
	}

	// The images of the pods the operator renders (Valkey 8 and the
	// exporter), of client pods running the TLS page's commands, and of
	// the chart's Deployment, built from this tree.
	imgDir := filepath.Join(dir, "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return "", err
	}
	op := nodeimages.Operator(c.opts.Root)
	for _, build := range []func() (nodeimages.Image, error){
		func() (nodeimages.Image, error) { return nodeimages.BuildValkey(ctx, nodeimages.Valkey8(), imgDir) },
		func() (nodeimages.Image, error) { return nodeimages.BuildExporter(ctx, nodeimages.Exporter(), imgDir) },
		func() (nodeimages.Image, error) { return nodeimages.BuildClient(ctx, nodeimages.Client(), imgDir) },
		func() (nodeimages.Image, error) { return nodeimages.BuildOperator(ctx, op, imgDir) },
	} {
		img, err := build()
		if err != nil {
			return "", err
		}
		if err := node.ImportImage(ctx, img.Path); err != nil {
			return "", err
		}
		c.opts.Logf("image %s imported (%s)", img.FullName, img.Digest)
	}
	return op.Name, nil
}

// startStorage installs the default StorageClass and runs its provisioner
// against the control plane: the real PV controller binds each claim once
// its pod is scheduled, and the node's kubelet mounts the volume, a
// directory under dir.
func (c *Cluster) startStorage(ctx context.Context, dir string) error {
	cs, err := kubernetes.NewForConfig(c.ControlPlane.Config)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	wait, err := localkube.StartDirStorage(pctx, cs, dir, c.opts.Log.WithName("provisioner"))
	if err != nil {
		cancel()
		return fmt.Errorf("storage: %w", err)
	}
	c.VolumesDir = dir
	c.stops = append(c.stops, func() { cancel(); wait() })
	return nil
}
