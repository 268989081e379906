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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/chartinstall"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/nodeimages"
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
const operatorNamespace = controller.DefaultNamespace

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

// bootstrap starts everything the tests share and returns what stops it,
// which is safe to call whatever bootstrap got to.
func bootstrap(ctx context.Context, dir string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	t0 := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "test/realnode: %6.1fs "+format+"\n", append([]any{time.Since(t0).Seconds()}, args...)...)
	}
	root, err := testbin.RepoRoot()
	if err != nil {
		return stop, err
	}
	ctrl.SetLogger(fileLog(filepath.Join(dir, "controller-runtime.log")))

	kubeconfig := os.Getenv(envKubeconfig)
	values := map[string]any{}
	if kubeconfig == "" {
		kubeconfig = filepath.Join(dir, "kubeconfig")
		image, err := startNode(ctx, dir, root, &stops, logf)
		if err != nil {
			return stop, err
		}
		if err := cp.WriteKubeconfig(kubeconfig); err != nil {
			return stop, err
		}
		// No registry: the kubelet runs the image imported into the node.
		if values, err = chartinstall.ImageValues(image, string(corev1.PullIfNotPresent)); err != nil {
			return stop, err
		}
	} else if image := os.Getenv(envOperatorImage); image != "" {
		if values, err = chartinstall.ImageValues(image, ""); err != nil {
			return stop, err
		}
	}
	if restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return stop, fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	scheme, err := controller.NewScheme()
	if err != nil {
		return stop, err
	}
	if k8sClient, err = client.New(restConfig, client.Options{Scheme: scheme}); err != nil {
		return stop, err
	}
	if clientset, err = kubernetes.NewForConfig(restConfig); err != nil {
		return stop, err
	}
	if err := ensureOperatorNamespace(ctx, operatorNamespace); err != nil {
		return stop, err
	}
	helm := chartinstall.Options{
		Kubeconfig: kubeconfig,
		ChartDir:   filepath.Join(root, "charts", "valkey-operator"),
		Namespace:  operatorNamespace,
		Values:     values,
		Log:        fileWriter(filepath.Join(dir, "helm.log")),
	}
	stops = append(stops, func() {
		if err := chartinstall.Uninstall(helm); err != nil {
			fmt.Fprintln(os.Stderr, "test/realnode:", err)
		}
	})
	if err := chartinstall.Install(ctx, helm); err != nil {
		return stop, err
	}
	leader, err := chartinstall.WaitLeader(ctx, clientset, operatorNamespace, 2*time.Minute)
	if err != nil {
		return stop, err
	}
	logf("chart installed; operator pod %s leads", leader.Name)
	return stop, nil
}

// startNode starts the control plane and the node, imports the images the
// tests' pods and the chart's Deployment run, and returns the operator's.
func startNode(ctx context.Context, dir, root string, stops *[]func(), logf func(string, ...any)) (string, error) {
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
	if cp, err = localkube.StartControlPlane(ctx, localkube.ControlPlaneOptions{
		Dir:                     filepath.Join(dir, "cp"),
		ServiceAccountAdmission: true,
		APIServerArgs:           kc.APIServerArgs(),
		ControllerManagerArgs:   []string{"--flex-volume-plugin-dir=" + filepath.Join(dir, "cp", "flex")},
		// Pods reach the apiserver through the `kubernetes` Service, as an
		// operator pod's in-cluster configuration does.
		PodNetwork: &localkube.PodNetwork{Address: nodeIP.String(), ClusterDomain: clusterDomain},
	}); err != nil {
		return "", fmt.Errorf("control plane: %w", err)
	}
	*stops = append(*stops, func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	})
	logf("control plane up")

	if node, err = realnode.Start(ctx, realnode.Options{
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
	}); err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	*stops = append(*stops, func() {
		if err := node.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the node:", err)
		}
	})
	logf("node %s Ready (bridge %s, pod subnet %s, cluster DNS %s)", node.Name, node.Bridge, node.PodSubnet, node.DNS)
	stopStorage, err := startStorage(ctx, filepath.Join(dir, "volumes"))
	if err != nil {
		return "", err
	}
	*stops = append(*stops, stopStorage)

	// The images of the pods the tests render (Valkey 8 and the
	// exporter), of the client pods the tests run the TLS page's commands
	// from, and of the chart's Deployment, built from this tree.
	imgDir := filepath.Join(dir, "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return "", err
	}
	op := nodeimages.Operator(root)
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
		logf("image %s imported (%s)", img.FullName, img.Digest)
	}
	return op.Name, nil
}

// ensureOperatorNamespace creates namespace enforcing Pod Security
// restricted, unless it exists: the chart's pods must be admitted there.
func ensureOperatorNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// printOperatorLogs prints what kubectl logs would of the operator's pods.
func printOperatorLogs() {
	if clientset == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Fprintf(os.Stderr, "--- operator logs ---\n%s\n", chartinstall.Logs(ctx, clientset, operatorNamespace, 300))
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
