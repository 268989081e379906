package controller_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/testenv"
)

// laggingReader is the operator's cache running behind the apiserver: a
// ValkeyNode shows up in it only lag after it was created, longer than the
// operator waits for its own writes to come back.
type laggingReader struct {
	client.Client
	lag time.Duration
}

func (l laggingReader) fresh(o metav1.Object) bool {
	return time.Since(o.GetCreationTimestamp().Time) < l.lag
}

func (l laggingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := l.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if n, ok := obj.(*valkeyv1.ValkeyNode); ok && l.fresh(n) {
		return apierrors.NewNotFound(valkeyv1.GroupVersion.WithResource("valkeynodes").GroupResource(), key.Name)
	}
	return nil
}

func (l laggingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if nl, ok := list.(*valkeyv1.ValkeyNodeList); ok {
		kept := nl.Items[:0]
		for _, n := range nl.Items {
			if !l.fresh(&n) {
				kept = append(kept, n)
			}
		}
		nl.Items = kept
	}
	return nil
}

// A node created while the operator's cache lags behind is not created
// again: a reconcile that cannot yet see the nodes the last one created
// waits for them instead of planning on a view that lacks them. The lag
// here is longer than the operator ever waits for a write to come back,
// so each reconcile in between sees a cluster with members missing.
func TestNodeCreationSurvivesCacheLag(t *testing.T) {
	t.Parallel()
	const lag = 15 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Its own apiserver and operator: the package's operator would
	// reconcile the cluster with an up-to-date cache.
	lagEnv, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lagEnv.Stop() }()
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	opts := options.DefaultOptions()
	opts.PendingRequeue = 200 * time.Millisecond
	opts.ErrorBackoffMax = time.Second
	mgr, err := ctrl.NewManager(lagEnv.Config, ctrl.Options{
		Scheme:  scheme,
		Cache:   controller.CacheOptions(opts),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The package's operator has registered the same controllers in
		// this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.New(cfg, o)
			return laggingReader{Client: c, lag: lag}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Setup(mgr, opts); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	c := lagEnv.Client
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lag"}},
		&valkeyv1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: "valkey-lag"},
			Spec: valkeyv1.ValkeyImageSpec{Repository: "valkey/valkey", Tag: "8.0.1", Version: "8.0.1"}},
		&valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: "standard-lag"},
			Spec: valkeyv1.ValkeyConfigSpec{ImageRef: "valkey-lag"}},
		&valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "lag", Name: "lagged"},
			Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: "standard-lag", Shards: 2, ReplicasPerShard: 1}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}

	const want = 4
	deadline := time.Now().Add(3 * lag)
	for {
		var nodes valkeyv1.ValkeyNodeList
		if err := c.List(ctx, &nodes, client.InNamespace("lag")); err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) > want {
			t.Fatalf("%d ValkeyNodes for a 2x1 cluster: created again while the cache lagged", len(nodes.Items))
		}
		// Done once the operator's own view holds every node: from then on
		// it plans on the whole cluster.
		var vc valkeyv1.ValkeyCluster
		if err := c.Get(ctx, client.ObjectKey{Namespace: "lag", Name: "lagged"}, &vc); err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) == want && len(vc.Status.Nodes) == want && allOlder(nodes.Items, lag+2*time.Second) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ValkeyNodes, status nodes %v", len(nodes.Items), vc.Status.Nodes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func allOlder(nodes []valkeyv1.ValkeyNode, age time.Duration) bool {
	for _, n := range nodes {
		if time.Since(n.CreationTimestamp.Time) < age {
			return false
		}
	}
	return true
}
