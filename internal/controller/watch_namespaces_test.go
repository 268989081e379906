package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
	"github.com/gomomento/valkey-operator/internal/controller/metering"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/testenv"
)

// watchErrors keeps every list or watch failure of the operator's cache.
type watchErrors struct {
	mu   sync.Mutex
	errs []string
}

func (w *watchErrors) handle(_ context.Context, r *toolscache.Reflector, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, fmt.Sprintf("%s: %v", r.TypeDescription(), err))
}

func (w *watchErrors) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.errs...)
}

// An operator started with --watch-namespaces=team-a and holding only the
// namespace-scoped install's roles (config/namespaced, generated from the
// markers) runs a cluster in team-a, never touches one in team-b, cannot
// read team-b's Secrets, and starts without a refused list or watch. Its
// own namespace, where the metering records go, is not among the watched.
func TestWatchNamespacesConfinesTheOperator(t *testing.T) {
	t.Parallel()
	const watched, unwatched, operatorNS = "team-a", "team-b", "ops"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Its own apiserver: the package's operator watches every namespace.
	scopedEnv, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = scopedEnv.Stop() }()
	c := scopedEnv.Client
	for _, ns := range []string{watched, unwatched, operatorNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	clusterRules, watchedRules, operatorRules, err := testenv.NamespacedInstallRules()
	if err != nil {
		t.Fatal(err)
	}
	operatorConfig, err := scopedEnv.UserWithRoles(ctx, "valkey-operator", clusterRules,
		map[string][]rbacv1.PolicyRule{watched: watchedRules, operatorNS: operatorRules})
	if err != nil {
		t.Fatal(err)
	}

	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	opts := options.DefaultOptions()
	opts.PendingRequeue = 200 * time.Millisecond
	opts.ErrorBackoffMax = time.Second
	opts.Namespace = operatorNS
	opts.WatchNamespaces = []string{watched}
	var refused watchErrors
	cacheOpts := controller.CacheOptions(opts)
	cacheOpts.DefaultWatchErrorHandler = refused.handle
	mgr, err := ctrl.NewManager(operatorConfig, ctrl.Options{
		Scheme:  scheme,
		Cache:   cacheOpts,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The package's operator has registered the same controllers in
		// this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Setup(mgr, opts); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()

	ca := testcerts.NewCA("scoped-ca")
	objs := []client.Object{
		&valkeyv1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: "valkey-scoped"},
			Spec: valkeyv1.ValkeyImageSpec{Repository: "valkey/valkey", Tag: "8.0.1", Version: "8.0.1"}},
		&valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: "standard-scoped"},
			Spec: valkeyv1.ValkeyConfigSpec{ImageRef: "valkey-scoped"}},
	}
	clusters := map[string]*valkeyv1.ValkeyCluster{}
	// team-b's cluster first: by the time team-a's is running, an operator
	// that saw team-b would have started on it too.
	for _, ns := range []string{unwatched, watched} {
		vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
			Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: "standard-scoped", Shards: 1, ReplicasPerShard: 1,
				TLS: &valkeyv1.TLSSpec{SecretRef: "cache-tls"}}}
		clusters[ns] = vc
		objs = append(objs, testcerts.Secret("cache-tls", ns, testcerts.Leaf(ca, "cache", ns, "cluster.local")), vc)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}

	// team-a's cluster: its user's TLS Secret read (TLSValid), its nodes
	// and Secrets created, its metering record kept in the operator's
	// namespace.
	ours := client.MatchingLabels{valkeyv1.LabelManagedBy: valkeyv1.LabelManagedByValue, valkeyv1.LabelInstance: "cache"}
	eventually(t, 60*time.Second, "team-a's cluster running", func() error {
		var vc valkeyv1.ValkeyCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(clusters[watched]), &vc); err != nil {
			return err
		}
		if cond := apimeta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondTLSValid); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("TLSValid %+v", cond)
		}
		var nodes valkeyv1.ValkeyNodeList
		if err := c.List(ctx, &nodes, client.InNamespace(watched)); err != nil {
			return err
		}
		if len(nodes.Items) != 2 {
			return fmt.Errorf("%d ValkeyNodes, want 2", len(nodes.Items))
		}
		var secrets corev1.SecretList
		if err := c.List(ctx, &secrets, client.InNamespace(watched), ours); err != nil {
			return err
		}
		if len(secrets.Items) == 0 {
			return errors.New("no Secret of the operator's")
		}
		var rec valkeyv1.ValkeyMeteringRecord
		return c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: metering.RecordName(&vc)}, &rec)
	})

	// team-b's cluster: untouched.
	var other valkeyv1.ValkeyCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(clusters[unwatched]), &other); err != nil {
		t.Fatal(err)
	}
	if other.Status.State != "" || len(other.Status.Conditions) > 0 || len(other.Finalizers) > 0 {
		t.Errorf("team-b's cluster was touched: state %q, conditions %v, finalizers %v", other.Status.State, other.Status.Conditions, other.Finalizers)
	}
	for _, list := range []client.ObjectList{&valkeyv1.ValkeyNodeList{}, &corev1.SecretList{}} {
		if err := c.List(ctx, list, client.InNamespace(unwatched), ours); err != nil {
			t.Fatal(err)
		}
		if n := apimeta.LenList(list); n > 0 {
			t.Errorf("%d %T of the operator's in team-b", n, list)
		}
	}
	var recs valkeyv1.ValkeyMeteringRecordList
	if err := c.List(ctx, &recs, client.InNamespace(operatorNS)); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs.Items {
		if r.Spec.ClusterNamespace != watched {
			t.Errorf("metering record %s of a cluster in %s", r.Name, r.Spec.ClusterNamespace)
		}
	}

	// What the operator's credentials may do.
	oc, err := client.New(operatorConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		call      func() error
		forbidden bool
	}{
		{"read a Secret in team-b", func() error {
			return oc.Get(ctx, client.ObjectKey{Namespace: unwatched, Name: "cache-tls"}, &corev1.Secret{})
		}, true},
		{"list Secrets in every namespace", func() error { return oc.List(ctx, &corev1.SecretList{}) }, true},
		{"list Pods in team-b", func() error { return oc.List(ctx, &corev1.PodList{}, client.InNamespace(unwatched)) }, true},
		{"create a ValkeyNode in team-b", func() error {
			return oc.Create(ctx, &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: unwatched, Name: "intruder"}}, client.DryRunAll)
		}, true},
		{"read a Secret in team-a", func() error {
			return oc.Get(ctx, client.ObjectKey{Namespace: watched, Name: "cache-tls"}, &corev1.Secret{})
		}, false},
		{"list the menu cluster-wide", func() error { return oc.List(ctx, &valkeyv1.ValkeyConfigList{}) }, false},
		{"list metering records in its namespace", func() error {
			return oc.List(ctx, &valkeyv1.ValkeyMeteringRecordList{}, client.InNamespace(operatorNS))
		}, false},
	}
	for _, tt := range tests {
		err := tt.call()
		switch {
		case tt.forbidden && !apierrors.IsForbidden(err):
			t.Errorf("%s: %v, want Forbidden", tt.name, err)
		case !tt.forbidden && err != nil:
			t.Errorf("%s: %v, want it allowed", tt.name, err)
		}
	}

	if errs := refused.get(); len(errs) > 0 {
		t.Errorf("the operator's cache failed to list or watch:\n%v", errs)
	}
	select {
	case err := <-stopped:
		t.Fatalf("the manager stopped: %v", err)
	default:
	}
}
