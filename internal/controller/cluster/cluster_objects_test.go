package cluster

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
	"github.com/gomomento/valkey-operator/internal/render"
)

func TestShardPods(t *testing.T) {
	node := func(name string, shard int32, lc valkeyv1.NodeLifecycle) *valkeyv1.ValkeyNode {
		n := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n.Spec.ShardIndex, n.Spec.Lifecycle = shard, lc
		return n
	}
	for _, tt := range []struct {
		name     string
		replicas int32
		nodes    []*valkeyv1.ValkeyNode
		want     map[int32]int
	}{
		{"steady 2x1", 1,
			[]*valkeyv1.ValkeyNode{node("a", 0, valkeyv1.LifecycleActive), node("b", 0, valkeyv1.LifecycleActive), node("c", 1, valkeyv1.LifecycleActive), node("d", 1, valkeyv1.LifecycleActive)},
			map[int32]int{0: 2, 1: 2}},
		{"no replicas", 0,
			[]*valkeyv1.ValkeyNode{node("a", 0, valkeyv1.LifecycleActive), node("b", 1, valkeyv1.LifecycleActive)},
			map[int32]int{0: 1, 1: 1}},
		{"a shard that lost its pods keeps the desired size", 2,
			[]*valkeyv1.ValkeyNode{node("a", 0, valkeyv1.LifecycleActive)},
			map[int32]int{0: 3}},
		{"a replacement joining and a replica leaving count", 1,
			[]*valkeyv1.ValkeyNode{node("a", 0, valkeyv1.LifecycleActive), node("b", 0, valkeyv1.LifecycleLeaving), node("c", 0, valkeyv1.LifecycleJoining)},
			map[int32]int{0: 3}},
		{"no nodes, no shards", 1, nil, map[int32]int{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vc := &valkeyv1.ValkeyCluster{}
			vc.Spec.Shards, vc.Spec.ReplicasPerShard = 2, tt.replicas
			o := &observed{nodes: map[string]*valkeyv1.ValkeyNode{}}
			for _, n := range tt.nodes {
				o.nodes[n.Name] = n
			}
			if got := shardPods(vc, o); !maps.Equal(got, tt.want) {
				t.Errorf("shardPods = %v, want %v", got, tt.want)
			}
		})
	}
}

// ensurePDBs creates missing budgets, corrects changed ones (a budget of an
// earlier version with maxUnavailable included) and deletes those of shards
// that are gone.
func TestEnsurePDBs(t *testing.T) {
	ctx := context.Background()
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "ns", UID: "uid-1"}}
	rc := render.Cluster{Cluster: vc}
	one := intstr.FromInt32(1)
	old := rc.PodDisruptionBudget(0, 2)
	old.Spec.MinAvailable, old.Spec.MaxUnavailable = nil, &one
	resized := rc.PodDisruptionBudget(1, 2)
	gone := rc.PodDisruptionBudget(7, 2)
	c := fakeCache(scheme).WithObjects(old, resized, gone).Build()
	r := &Reconciler{Client: c}

	if err := r.ensurePDBs(ctx, rc, map[int32]int{0: 2, 1: 3, 2: 1}); err != nil {
		t.Fatal(err)
	}
	for shard, wantMin := range map[int32]int32{0: 1, 1: 2, 2: 0} {
		var got policyv1.PodDisruptionBudget
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: render.PodDisruptionBudgetName("cache", shard)}, &got); err != nil {
			t.Fatalf("shard %d: %v", shard, err)
		}
		if got.Spec.MaxUnavailable != nil || got.Spec.MinAvailable == nil || *got.Spec.MinAvailable != intstr.FromInt32(wantMin) {
			t.Errorf("shard %d: minAvailable %v, maxUnavailable %v; want minAvailable %d only", shard, got.Spec.MinAvailable, got.Spec.MaxUnavailable, wantMin)
		}
	}
	err = c.Get(ctx, client.ObjectKeyFromObject(gone), &policyv1.PodDisruptionBudget{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("budget of a shard that is gone: %v, want deleted", err)
	}
}

// ensurePasswords mints every password once, and completes the Secret of a
// cluster created before the exporter's user existed without touching the
// other passwords.
func TestEnsurePasswords(t *testing.T) {
	ctx := context.Background()
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "ns", UID: "uid-1"}}
	rc := render.Cluster{Cluster: vc}
	key := client.ObjectKey{Namespace: "ns", Name: render.OperatorAuthSecretName("cache")}
	older := render.Passwords{Operator: strings.Repeat("a", 128), Replication: strings.Repeat("b", 128)}
	complete := older
	complete.Exporter = strings.Repeat("c", 128)
	oldSecret := rc.OperatorAuthSecret(older)
	delete(oldSecret.Data, render.KeyExporterPassword)

	for _, tt := range []struct {
		name     string
		existing *corev1.Secret
		want     func(t *testing.T, got render.Passwords)
	}{
		{"new cluster", nil, func(t *testing.T, got render.Passwords) {
			if got.Operator == "" || got.Replication == "" || got.Exporter == "" {
				t.Errorf("passwords %+v, want all three", got)
			}
		}},
		{"a Secret from before the exporter", oldSecret, func(t *testing.T, got render.Passwords) {
			if got.Operator != older.Operator || got.Replication != older.Replication || len(got.Exporter) != 128 {
				t.Errorf("passwords %+v, want the old two and a new exporter password", got)
			}
		}},
		{"complete", rc.OperatorAuthSecret(complete), func(t *testing.T, got render.Passwords) {
			if got != complete {
				t.Errorf("passwords %+v, want %+v", got, complete)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := fakeCache(scheme)
			if tt.existing != nil {
				b = b.WithObjects(tt.existing.DeepCopy())
			}
			c := b.Build()
			r := &Reconciler{Client: c, APIReader: c}
			got, err := r.ensurePasswords(ctx, rc)
			if err != nil {
				t.Fatal(err)
			}
			tt.want(t, got)
			var s corev1.Secret
			if err := c.Get(ctx, key, &s); err != nil {
				t.Fatal(err)
			}
			stored, err := render.PasswordsFromSecret(&s)
			if err != nil || stored != got {
				t.Errorf("the Secret holds %+v, %v; want %+v", stored, err, got)
			}
			// Read again: nothing is minted twice.
			if again, err := r.ensurePasswords(ctx, rc); err != nil || again != got {
				t.Errorf("second call = %+v, %v; want %+v", again, err, got)
			}
		})
	}
}
