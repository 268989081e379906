package controller_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/testenv"
)

// One apiserver and one operator for the package. No pod ever runs here (no
// scheduler, no kubelet): these tests cover what the operator decides and
// writes before Valkey is involved.
var (
	env       *testenv.Env
	k8sClient client.Client
	// operatorCache is what the operator's controllers read.
	operatorCache cache.Cache
	// operatorConfig holds the generated ClusterRole and nothing else.
	operatorConfig *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	k8sClient = env.Client

	scheme, err := apischeme.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The operator runs as a user holding only the generated ClusterRole,
	// as its ServiceAccount does once installed: a call the role does not
	// allow fails these tests.
	role, err := testenv.OperatorClusterRole()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	operatorConfig, err = env.UserWithClusterRole(context.Background(), "valkey-operator", role.Rules)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := options.DefaultOptions()
	opts.PendingRequeue = 200 * time.Millisecond
	mgr, err := ctrl.NewManager(operatorConfig, ctrl.Options{Scheme: scheme, Cache: controller.CacheOptions(opts), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	operatorCache = mgr.GetCache()
	if err := controller.Setup(mgr, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}

// eventually polls cond until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %v", what, err)
}

func namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}
