// Package realcluster starts a whole cluster on this machine whose pods run
// as containers: a test control plane, one real node (containerd, runc, a
// kubelet, CoreDNS and kube-proxy: internal/realnode), a storage
// provisioner, the images the operator's pods name, built here, and the
// operator itself installed by its chart through Helm's library, as a user
// installs it. The real-node conformance suite and the real-node playground
// both start it; it can also install the operator onto a cluster a
// kubeconfig names.
package realcluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/chartinstall"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/realnode"
)

// OperatorNamespace is where the chart is installed: its release
// namespace, that of the Deployment, its Lease and its metering records.
const OperatorNamespace = controller.DefaultNamespace

// Options configure Start.
type Options struct {
	// Dir holds everything of the run. Keep it short: containerd's and the
	// kubelet's unix sockets live under it.
	Dir string
	// Root is the repository's root: the chart and the operator's sources.
	Root string
	// Kubeconfig, when set, names a cluster of the user's: nothing is
	// started, the chart is installed there. Empty: the cluster is started
	// here (root only).
	Kubeconfig string
	// OperatorImage is the image the chart installs on a Kubeconfig's
	// cluster; empty means the chart's own. Ignored when the cluster is
	// started here: the operator's image is built from Root.
	OperatorImage string
	// Logf reports progress; nil reports nothing.
	Logf func(format string, args ...any)
	// Warn receives what went wrong while stopping; nil drops it.
	Warn func(error)
	// HelmLog receives Helm's log; nil drops it.
	HelmLog io.Writer
	// Log is the storage provisioner's logger.
	Log logr.Logger
}

// Cluster is what Start started.
type Cluster struct {
	// ControlPlane and Node are nil on a Kubeconfig's cluster.
	ControlPlane *localkube.ControlPlane
	Node         *realnode.Node
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// Config, Client and Clientset are the admin's; Client reads around any
	// cache.
	Config    *rest.Config
	Client    client.Client
	Clientset kubernetes.Interface
	// VolumesDir holds the directory of each volume the provisioner made.
	VolumesDir string

	opts  Options
	stops []func()
}

// Start starts the cluster and installs the operator by its chart, and
// waits for the operator to lead. It returns the Cluster even when it
// fails, so the caller can read the logs of what started; Stop undoes
// whatever Start got to.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Warn == nil {
		opts.Warn = func(error) {}
	}
	if opts.HelmLog == nil {
		opts.HelmLog = io.Discard
	}
	c := &Cluster{opts: opts, Kubeconfig: opts.Kubeconfig}
	return c, c.start(ctx)
}

// Stop uninstalls the chart and stops the storage, the node and the
// control plane, in that order; what fails is reported to Options.Warn.
func (c *Cluster) Stop() {
	for i := len(c.stops) - 1; i >= 0; i-- {
		c.stops[i]()
	}
	c.stops = nil
}

func (c *Cluster) start(ctx context.Context) error {
	values := map[string]any{}
	if c.Kubeconfig == "" {
		c.Kubeconfig = filepath.Join(c.opts.Dir, "kubeconfig")
		image, err := c.startNode(ctx)
		if err != nil {
			return err
		}
		if err := c.ControlPlane.WriteKubeconfig(c.Kubeconfig); err != nil {
			return err
		}
		// No registry: the kubelet runs the image imported into the node.
		if values, err = chartinstall.ImageValues(image, string(corev1.PullIfNotPresent)); err != nil {
			return err
		}
	} else if c.opts.OperatorImage != "" {
		var err error
		if values, err = chartinstall.ImageValues(c.opts.OperatorImage, ""); err != nil {
			return err
		}
	}
	if err := c.connect(); err != nil {
		return err
	}
	return c.installOperator(ctx, values)
}

func (c *Cluster) connect() error {
	var err error
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return fmt.Errorf("reading %s: %w", c.Kubeconfig, err)
	}
	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	c.Clientset, err = kubernetes.NewForConfig(c.Config)
	return err
}

func (c *Cluster) installOperator(ctx context.Context, values map[string]any) error {
	if err := c.ensureOperatorNamespace(ctx); err != nil {
		return err
	}
	helm := chartinstall.Options{
		Kubeconfig: c.Kubeconfig,
		ChartDir:   filepath.Join(c.opts.Root, "charts", "valkey-operator"),
		Namespace:  OperatorNamespace,
		Values:     values,
		Log:        c.opts.HelmLog,
	}
	c.stops = append(c.stops, func() {
		if err := chartinstall.Uninstall(helm); err != nil {
			c.opts.Warn(err)
		}
	})
	if err := chartinstall.Install(ctx, helm); err != nil {
		return err
	}
	leader, err := chartinstall.WaitLeader(ctx, c.Clientset, OperatorNamespace, 2*time.Minute)
	if err != nil {
		return err
	}
	c.opts.Logf("chart installed; operator pod %s leads", leader.Name)
	return nil
}

// ensureOperatorNamespace creates the operator's namespace enforcing Pod
// Security restricted, unless it exists: the chart's pods must be admitted
// there.
func (c *Cluster) ensureOperatorNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", OperatorNamespace, err)
	}
	return nil
}

// OperatorLogs is what kubectl logs prints of the operator's pods, or
// nothing before Start connected.
func (c *Cluster) OperatorLogs(ctx context.Context, tail int64) string {
	if c.Clientset == nil {
		return ""
	}
	return chartinstall.Logs(ctx, c.Clientset, OperatorNamespace, tail)
}
