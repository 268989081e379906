// Package realnode runs the operator's pods on a real node: containerd,
// runc and a real kubelet (internal/realnode) joined to a test control
// plane, the images the rendered pods name built by internal/nodeimages,
// and the operator in this process at its shipped options with the
// generated ClusterRole. It checks what internal/localkube, the stand-in
// kubelet the e2e suite runs on, cannot show: that the rendered pod starts,
// serves and fails over under a real container runtime.
//
// It needs root and make node, which make test runs first.
package realnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/nodeimages"
	"github.com/gomomento/valkey-operator/internal/realnode"
	"github.com/gomomento/valkey-operator/internal/testbin"
	"github.com/gomomento/valkey-operator/internal/testenv"
)

var (
	// cp is the control plane, node the one real node the pods run on.
	cp   *localkube.ControlPlane
	node *realnode.Node
	// k8sClient is an admin client that reads around the operator's cache.
	k8sClient client.Client
	// runDir holds everything of the run; the operator's log is
	// runDir/operator.log.
	runDir string
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "test/realnode: a real node runs containerd and a kubelet, which need root")
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
		stop()
		return 1
	}
	code := m.Run()
	if code != 0 {
		printTail(filepath.Join(dir, "operator.log"), "operator log")
		printTail(filepath.Join(node.LogDir(), "kubelet.log"), "kubelet log")
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
	ctrl.SetLogger(operatorLog(filepath.Join(dir, "operator.log")))

	kc, err := realnode.NewKubeletClient(filepath.Join(dir, "kubelet-client"))
	if err != nil {
		return stop, err
	}
	nodeIP, err := realnode.DefaultNodeIP()
	if err != nil {
		return stop, err
	}
	clusterDomain := controller.DefaultOptions().ClusterDomain
	if cp, err = localkube.StartControlPlane(ctx, localkube.ControlPlaneOptions{
		Dir:                     filepath.Join(dir, "cp"),
		CRDDirectoryPaths:       []string{filepath.Join(root, "config", "crd", "bases")},
		ServiceAccountAdmission: true,
		APIServerArgs:           kc.APIServerArgs(),
		ControllerManagerArgs:   []string{"--flex-volume-plugin-dir=" + filepath.Join(dir, "cp", "flex")},
		// Pods reach the apiserver through the `kubernetes` Service, as an
		// operator pod's in-cluster configuration does.
		PodNetwork: &localkube.PodNetwork{Address: nodeIP.String(), ClusterDomain: clusterDomain},
	}); err != nil {
		return stop, fmt.Errorf("control plane: %w", err)
	}
	stops = append(stops, func() {
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
		return stop, fmt.Errorf("node: %w", err)
	}
	stops = append(stops, func() {
		if err := node.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the node:", err)
		}
	})
	logf("node %s Ready (bridge %s, pod subnet %s, cluster DNS %s)", node.Name, node.Bridge, node.PodSubnet, node.DNS)
	stopStorage, err := startStorage(ctx, filepath.Join(dir, "volumes"))
	if err != nil {
		return stop, err
	}
	stops = append(stops, stopStorage)

	// The images of the pods the tests render: Valkey 8 and the exporter;
	// and the client pods the tests run the TLS page's commands from.
	// The operator runs in this process, so its image is not needed.
	imgDir := filepath.Join(dir, "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return stop, err
	}
	for _, build := range []func() (nodeimages.Image, error){
		func() (nodeimages.Image, error) { return nodeimages.BuildValkey(ctx, nodeimages.Valkey8(), imgDir) },
		func() (nodeimages.Image, error) { return nodeimages.BuildExporter(ctx, nodeimages.Exporter(), imgDir) },
		func() (nodeimages.Image, error) { return nodeimages.BuildClient(ctx, nodeimages.Client(), imgDir) },
	} {
		img, err := build()
		if err != nil {
			return stop, err
		}
		if err := node.ImportImage(ctx, img.Path); err != nil {
			return stop, err
		}
		logf("image %s imported (%s)", img.FullName, img.Digest)
	}

	scheme, err := controller.NewScheme()
	if err != nil {
		return stop, err
	}
	if k8sClient, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		return stop, err
	}
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultNamespace}}); err != nil {
		return stop, err
	}
	opCfg, err := operatorUser(ctx)
	if err != nil {
		return stop, err
	}
	opts := controller.DefaultOptions()
	// Restore loaders are pods on the node: they reach the operator at
	// this machine's address on the node's bridge.
	if opts.RestoreFeedHost, err = bridgeAddress(node.Bridge); err != nil {
		return stop, err
	}
	stopOperator, err := startOperator(ctx, opCfg, opts)
	if err != nil {
		return stop, err
	}
	stops = append(stops, stopOperator)
	logf("operator running")
	return stop, nil
}

// operatorUser binds the generated ClusterRole to a new user and returns
// its client configuration, as the operator's ServiceAccount would have.
func operatorUser(ctx context.Context) (*rest.Config, error) {
	role, err := testenv.OperatorClusterRole()
	if err != nil {
		return nil, err
	}
	role.ObjectMeta = metav1.ObjectMeta{Name: "valkey-operator"}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "valkey-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "valkey-operator"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := k8sClient.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %T: %w", o, err)
		}
	}
	user, err := cp.Env.AddUser(envtest.User{Name: "valkey-operator"}, rest.CopyConfig(cp.Config))
	if err != nil {
		return nil, err
	}
	return user.Config(), nil
}

// startOperator runs the operator in this process as its Deployment
// would: the zero Runtime, a real cluster.
func startOperator(ctx context.Context, cfg *rest.Config, opts controller.Options) (func(), error) {
	scheme, err := controller.NewScheme()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Cache:   controller.CacheOptions(opts),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return nil, err
	}
	if err := controller.Setup(mgr, opts); err != nil {
		return nil, err
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mgrCtx); err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(mgrCtx) {
		cancel()
		<-done
		return nil, errors.New("operator cache did not sync")
	}
	return func() { cancel(); <-done }, nil
}

// bridgeAddress is this machine's IPv4 address on the node's bridge (the
// pods' gateway).
func bridgeAddress(bridge string) (string, error) {
	ifc, err := net.InterfaceByName(bridge)
	if err != nil {
		return "", err
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String(), nil
		}
	}
	return "", fmt.Errorf("bridge %s has no IPv4 address", bridge)
}

// operatorLog writes the operator's log to a file, printed when a test fails.
func operatorLog(path string) logr.Logger {
	f, err := os.Create(path)
	if err != nil {
		return logr.Discard()
	}
	return funcr.New(func(prefix, args string) {
		fmt.Fprintf(f, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
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
