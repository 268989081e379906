// Package e2e runs the operator against a real control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) and the local node
// runtime, which runs every pod as a real valkey-server process.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/testenv"
)

// projectionDelay is how long a Secret change takes to reach the pods'
// files: short, but long enough that the two stages of a rotation are real.
// $VALKEY_E2E_PROJECTION_DELAY overrides it, so benchmarks can compare.
var projectionDelay = 1500 * time.Millisecond

var (
	local     *localkube.Local
	k8sClient client.Client
	baseDir   string
	// operatorConfig holds the generated ClusterRole and nothing else, as
	// the operator's ServiceAccount does once installed.
	operatorConfig *rest.Config
	// stopOperator stops the running operator and waits for it to end.
	stopOperator func()
)

// testSampleInterval is the operator's sampling period in these tests:
// seconds instead of the shipped 30 s keep the autoscaling tests short.
const testSampleInterval = 2 * time.Second

// startOperator runs the operator in this process, as its Deployment would.
func startOperator(ctx context.Context) (stop func(), err error) {
	return startOperatorWith(ctx, nil)
}

// startOperatorWith is startOperator with the operator's API client
// configuration adjusted by tweak first (a rate limit, say); nil leaves it
// as the suite runs it.
func startOperatorWith(ctx context.Context, tweak func(*rest.Config)) (stop func(), err error) {
	return startOperatorFrom(ctx, suiteOptions(), tweak)
}

// environmentOptions are the shipped defaults with what this machine
// needs: restore loaders are processes here and reach the operator on
// loopback, at a port no other run holds; the kubelet here projects a
// changed Secret within projectionDelay.
func environmentOptions() controller.Options {
	opts := controller.DefaultOptions()
	opts.RestoreFeedAddress, opts.RestoreFeedHost = "127.0.0.1:0", "127.0.0.1"
	opts.CredentialsSettle = 2 * projectionDelay
	return opts
}

// suiteOptions are the options most tests run the operator with: the
// shipped ones with some timers shortened, each for the reason given.
func suiteOptions() controller.Options {
	opts := environmentOptions()
	opts.PendingRequeue = 500 * time.Millisecond
	// Failures the tests provoke on purpose should be retried within a
	// test's patience, not the shipped minute.
	opts.ErrorBackoffMax = 5 * time.Second
	// Autoscaling decides on samples; seconds instead of the default 30 s
	// keep its test short.
	opts.SampleInterval = testSampleInterval
	opts.MeteringInterval = 2 * time.Second
	// A converged cluster's full look, and the reloaders' visit of every
	// node, every 30 s instead of the shipped five minutes: the tests of
	// other features find what only that pass finds (a setting changed by
	// hand) within a test's patience. Reactions are proven at the shipped
	// pacing by the tests that run the operator with environmentOptions.
	opts.SafetyInterval = 30 * time.Second
	return opts
}

// startOperatorFrom runs the operator in this process with opts, its API
// client configuration adjusted by tweak (nil leaves it).
func startOperatorFrom(ctx context.Context, opts controller.Options, tweak func(*rest.Config)) (stop func(), err error) {
	scheme, err := controller.NewScheme()
	if err != nil {
		return nil, err
	}
	// As the shipped binary's config: no client-side rate limit (the
	// apiserver's priority and fairness governs), where client-go's default
	// of 5 requests a second would throttle every large cluster.
	cfg := rest.CopyConfig(operatorConfig)
	cfg.QPS = -1
	if tweak != nil {
		tweak(cfg)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Cache:   controller.CacheOptions(opts),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// A restarted operator registers its controllers again in this
		// process; in a real restart the process is new.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	// The local runtime moves mount paths; the TLS reloader must read and
	// name the files the node processes really use.
	if err := controller.SetupWithRuntime(mgr, opts, controller.Runtime{NodePath: local.Runtime.HostPath}); err != nil {
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
		return nil, fmt.Errorf("operator cache did not sync")
	}
	return func() { cancel(); <-done }, nil
}

// restartOperator stops the operator wherever it is and starts a new one,
// which knows nothing but what the API and Valkey hold.
func restartOperator(t testing.TB) {
	t.Helper()
	restartOperatorWith(t, nil)
}

// restartOperatorWith restarts the operator with its API client
// configuration adjusted by tweak (see startOperatorWith).
func restartOperatorWith(t testing.TB, tweak func(*rest.Config)) {
	t.Helper()
	stopOperator()
	var err error
	if stopOperator, err = startOperatorWith(context.Background(), tweak); err != nil {
		t.Fatalf("restarting the operator: %v", err)
	}
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "valkey-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	baseDir = dir
	if v := os.Getenv("VALKEY_E2E_PROJECTION_DELAY"); v != "" {
		if projectionDelay, err = time.ParseDuration(v); err != nil {
			fmt.Fprintln(os.Stderr, "VALKEY_E2E_PROJECTION_DELAY:", err)
			return 1
		}
	}
	runtimeDelay := projectionDelay
	if runtimeDelay == 0 {
		runtimeDelay = -1 // the runtime reads 0 as "its default"
	}

	local, err = localkube.StartLocal(ctx, localkube.LocalOptions{
		Dir:             dir,
		ProjectionDelay: runtimeDelay,
		// The seed's valkey-cli and openssl commands need the pod names in
		// /etc/hosts; only root may write it.
		EtcHosts: os.Geteuid() == 0,
		Out:      os.Stderr,
		// The fleet benchmark runs 400 one-node clusters on the three
		// nodes: more than the kubelet's default of 110 pods a node, as
		// many a fleet's kubelets are configured for.
		Runtime: localkube.Options{NodeCapacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("250"),
		}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting local cluster:", err)
		return 1
	}
	defer func() {
		if err := local.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping local cluster:", err)
		}
	}()

	scheme, err := controller.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctrl.SetLogger(operatorLog(filepath.Join(dir, "operator.log")))
	// Tests read around the operator's cache, so they see what the
	// apiserver has, not what the operator has noticed.
	if k8sClient, err = client.New(local.ControlPlane.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The operator's own namespace, where it keeps the metering records.
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if operatorConfig, err = operatorUser(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if stopOperator, err = startOperator(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	stopOperator()
	if code != 0 {
		if b, err := os.ReadFile(filepath.Join(dir, "operator.log")); err == nil {
			tail := b
			if len(tail) > 20000 {
				tail = tail[len(tail)-20000:]
			}
			fmt.Fprintf(os.Stderr, "--- operator log (tail) ---\n%s\n", tail)
		}
	}
	return code
}

// operatorUser binds config/rbac/role.yaml to a new user and returns its
// client configuration, so a call the role does not allow fails the tests.
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
	user, err := local.ControlPlane.Env.AddUser(envtest.User{Name: "valkey-operator"}, rest.CopyConfig(local.ControlPlane.Config))
	if err != nil {
		return nil, err
	}
	return user.Config(), nil
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

// eventually polls cond until it returns nil or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
}
