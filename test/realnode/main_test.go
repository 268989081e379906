// Package realnode is the operator's conformance suite on a real
// Kubernetes node. By default it starts one here: containerd, runc and a
// real kubelet (internal/realnode) joined to a test control plane, with the
// images the rendered pods name built by internal/nodeimages. Either way
// the operator is what a user installs: charts/valkey-operator through
// Helm's library, its Deployment with the chart's ServiceAccount, RBAC,
// leader election and HTTPS metrics. It checks what internal/localkube,
// the stand-in kubelet the e2e suite runs on, cannot show: that the
// rendered pods start, serve and fail over under a real container runtime.
//
// With VALKEY_CONFORMANCE_KUBECONFIG set it runs on the cluster that
// kubeconfig names instead (docs/install.md). Without it, it needs root
// and make node, which make test runs first.
package realnode

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/realcluster"
	"github.com/gomomento/valkey-operator/internal/realnode"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// The environment that points the suite at a cluster of the user's: the
// path of its kubeconfig, and the operator image the chart installs there
// (default: the chart's own, gomomento/valkey-operator at its appVersion).
const (
	envKubeconfig    = "VALKEY_CONFORMANCE_KUBECONFIG"
	envOperatorImage = "VALKEY_CONFORMANCE_OPERATOR_IMAGE"
)

// operatorNamespace is where the chart is installed: its release
// namespace, that of the Deployment, its Lease and its metering records.
const operatorNamespace = realcluster.OperatorNamespace

var (
	// cp is the control plane, node the one real node the pods run on;
	// both nil on a cluster a kubeconfig names.
	cp   *localkube.ControlPlane
	node *realnode.Node
	// k8sClient is an admin client that reads around the operator's
	// cache, clientset the same user's typed client (logs, leases).
	k8sClient  client.Client
	clientset  kubernetes.Interface
	restConfig *rest.Config
	// runDir holds everything of the run.
	runDir string
	// volumesDir holds the directory of each volume the provisioner made.
	volumesDir string
	// cluster is what bootstrap started.
	cluster *realcluster.Cluster
)

func TestMain(m *testing.M) {
	if os.Getenv(envKubeconfig) == "" && os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "test/realnode: a real node runs containerd and a kubelet, which need root (or set %s to run on a cluster of yours)\n", envKubeconfig)
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Short: containerd's and the kubelet's unix sockets live under it.
	dir, err := os.MkdirTemp("", "rn-vk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	runDir = dir
	keep := os.Getenv("REALNODE_KEEP_LOGS") != ""
	defer func() {
		if !keep {
			_ = os.RemoveAll(dir)
		}
	}()
	stop, err := bootstrap(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/realnode:", err)
		printOperatorLogs()
		stop()
		return 1
	}
	code := m.Run()
	if code != 0 {
		printOperatorLogs()
		if node != nil {
			printTail(filepath.Join(node.LogDir(), "kubelet.log"), "kubelet log")
		}
	}
	stop()
	if keep {
		fmt.Fprintln(os.Stderr, "test/realnode: logs kept in", dir)
	}
	return code
}

// bootstrap starts everything the tests share (internal/realcluster) and
// returns what stops it, which is safe to call whatever bootstrap got to.
func bootstrap(ctx context.Context, dir string) (stop func(), err error) {
	stop = func() {}
	t0 := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "test/realnode: %6.1fs "+format+"\n", append([]any{time.Since(t0).Seconds()}, args...)...)
	}
	root, err := testbin.RepoRoot()
	if err != nil {
		return stop, err
	}
	ctrl.SetLogger(fileLog(filepath.Join(dir, "controller-runtime.log")))
	c, err := realcluster.Start(ctx, realcluster.Options{
		Dir:           dir,
		Root:          root,
		Kubeconfig:    os.Getenv(envKubeconfig),
		OperatorImage: os.Getenv(envOperatorImage),
		Logf:          logf,
		Warn:          func(err error) { fmt.Fprintln(os.Stderr, "test/realnode:", err) },
		HelmLog:       fileWriter(filepath.Join(dir, "helm.log")),
		Log:           ctrl.Log,
	})
	cluster = c
	cp, node = c.ControlPlane, c.Node
	k8sClient, clientset, restConfig = c.Client, c.Clientset, c.Config
	volumesDir = c.VolumesDir
	return c.Stop, err
}

// printOperatorLogs prints what kubectl logs would of the operator's pods.
func printOperatorLogs() {
	if cluster == nil || cluster.Clientset == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Fprintf(os.Stderr, "--- operator logs ---\n%s\n", cluster.OperatorLogs(ctx, 300))
}

// fileWriter is a file to log to, or nothing when it cannot be created.
func fileWriter(path string) io.Writer {
	f, err := os.Create(path)
	if err != nil {
		return io.Discard
	}
	return f
}

// fileLog writes controller-runtime's log (the tests' clients') to a file.
func fileLog(path string) logr.Logger {
	w := fileWriter(path)
	return funcr.New(func(prefix, args string) {
		fmt.Fprintf(w, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: 1})
}

func printTail(path, what string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if len(b) > 20000 {
		b = b[len(b)-20000:]
	}
	fmt.Fprintf(os.Stderr, "--- %s (tail) ---\n%s\n", what, b)
}
