package playground

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// DemoOptions configure Demo.
type DemoOptions struct {
	// Dir holds the kubeconfig, ca.crt, logs and pod files. Default .local.
	Dir string
	// EtcHosts keeps pod and Service names in /etc/hosts (root only), so the
	// printed valkey-cli command works from any shell.
	EtcHosts bool
	// ProjectionDelay: how long Secret changes take to reach pod files.
	ProjectionDelay time.Duration
	// Out receives progress and the commands to try. Default os.Stdout.
	Out io.Writer
	// Ready, when set, is called with the sample once it is Active.
	Ready func(ctx context.Context, s *Sample) error
	// RealNode runs the demo on a real node instead (root only): its pods
	// are containers under a real kubelet, and the operator is installed by
	// its chart (internal/realcluster).
	RealNode bool
	// NodeDir holds the real node's state, its unix sockets included, so
	// it must be short. Default: a new temporary directory, removed at the
	// end.
	NodeDir string
}

// Demo runs the local control plane and node runtime, the operator, and the
// sample TLS cluster; it prints how to reach the cluster once it is Active
// and runs until ctx ends.
func Demo(ctx context.Context, opts DemoOptions) (err error) {
	if opts.Dir == "" {
		opts.Dir = ".local"
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.RealNode {
		return realNodeDemo(ctx, opts)
	}
	out := opts.Out
	root, err := testbin.RepoRoot()
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintln(out, "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the node runtime")
	l, err := localkube.StartLocal(ctx, localkube.LocalOptions{
		Dir: opts.Dir, EtcHosts: opts.EtcHosts, ProjectionDelay: opts.ProjectionDelay, Out: out,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "stopping the cluster's pods and the control plane")
		if serr := l.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	dir, _ := filepath.Abs(opts.Dir)

	logFile, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel)))
	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	opOpts := controller.DefaultOptions()
	opOpts.RestoreFeedAddress, opOpts.RestoreFeedHost = "127.0.0.1:0", "127.0.0.1"
	mgrCtx, stopMgr := context.WithCancel(ctx)
	defer stopMgr()
	mgrDone, err := startOperator(mgrCtx, l, scheme, opOpts)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "operator running (log: %s)\n", logFile.Name())

	c, err := client.New(l.ControlPlane.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	sample, err := installSample(ctx, out, c, filepath.Join(root, "config", "samples"), dir, opOpts.ClusterDomain)
	if err != nil {
		return err
	}
	printTryCommands(out, time.Since(start), l.Kubeconfig, sample, opts.EtcHosts)
	if opts.Ready != nil {
		if err := opts.Ready(ctx, sample); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
	case err := <-mgrDone:
		if err != nil {
			return fmt.Errorf("operator stopped: %w", err)
		}
	}
	return nil
}

// startOperator sets the operator up against l and runs it until ctx ends;
// the returned channel receives what its manager returned.
func startOperator(ctx context.Context, l *localkube.Local, scheme *runtime.Scheme, opOpts controller.Options) (<-chan error, error) {
	// As the shipped binary's config: no client-side rate limit.
	opCfg := rest.CopyConfig(l.ControlPlane.Config)
	opCfg.QPS = -1
	mgr, err := ctrl.NewManager(opCfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controller.CacheOptions(opOpts),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("creating the operator: %w", err)
	}
	// The operator's own namespace, where it keeps the metering records.
	nc, err := client.New(l.ControlPlane.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if err := nc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opOpts.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", opOpts.Namespace, err)
	}
	if err := controller.SetupWithRuntime(mgr, opOpts, controller.Runtime{NodePath: l.Runtime.HostPath}); err != nil {
		return nil, err
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	return mgrDone, nil
}

// installSample applies the samples and waits, reporting progress to out,
// until the sample cluster is Active.
func installSample(ctx context.Context, out io.Writer, c client.Client, samplesDir, dir, clusterDomain string) (*Sample, error) {
	sample, err := Install(ctx, c, samplesDir, dir, clusterDomain)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "applied config/samples: ValkeyImage valkey-8, ValkeyConfig standard, ValkeyCluster %s/%s\n", Namespace, Cluster)
	if err := waitActive(ctx, c, func(state, message string) {
		if message != "" {
			state += ": " + message
		}
		fmt.Fprintf(out, "ValkeyCluster %s/%s: %s\n", Namespace, Cluster, state)
	}); err != nil {
		return nil, err
	}
	return sample, nil
}

func printTryCommands(out io.Writer, took time.Duration, kubeconfig string, sample *Sample, etcHosts bool) {
	fmt.Fprintf(out, "\nready after %s. Try:\n\n", took.Round(time.Second))
	fmt.Fprintf(out, "  kubectl --kubeconfig %s get valkeyclusters,valkeynodes -A\n", kubeconfig)
	if etcHosts {
		fmt.Fprintf(out, "  %s\n", sample.Command())
	} else {
		fmt.Fprintf(out, "  (run as root, or with --etc-hosts, for pod names to resolve outside this process)\n")
	}
	fmt.Fprintln(out, "\nPress Ctrl-C to stop.")
}
