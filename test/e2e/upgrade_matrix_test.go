package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// Rolling upgrades between the versions we run, in the directions
// TestRollingReplacement does not take: back down from 9.1.2 to 8.0.1
// (Valkey 8 loads the files Valkey 9 streams to a fresh replica as long as
// they hold no type 8 lacks), and up over TLS. Each runs under client load
// and must cost no request at all, hand every primary over exactly once,
// keep every shard's slots and every key.
func TestUpgradeMatrix(t *testing.T) {
	t.Parallel()
	t.Run("9.1.2 to 8.0.1", func(t *testing.T) {
		t.Parallel()
		const ns = "upgrade-down"
		createNamespace(t, ns)
		cfg := createACLMenu(t, ns, "9.1.2")
		key := newClusterWith(t, ns, "cache", cfg, 2, 1)
		rollImage(t, key, clusterClient(t, seedOf(key), nil), imageNameOf(cfg), "8.0.1", 2)
	})
	t.Run("9.1.2 to 8.0.1 with data 8 cannot read", func(t *testing.T) {
		t.Parallel()
		const ns = "upgrade-refused"
		createNamespace(t, ns)
		cfg := createACLMenu(t, ns, "9.1.2")
		key := newClusterWith(t, ns, "cache", cfg, 1, 1)
		downgradeRefusedThenUndone(t, key, imageNameOf(cfg))
	})
	t.Run("8.0.1 to 9.1.2 over TLS", func(t *testing.T) {
		t.Parallel()
		const ns = "upgrade-tls"
		cfg := createACLMenu(t, ns, "8.0.1")
		ca := testcerts.NewCA("upgrade-tls-ca")
		f := newTLSCluster(t, ns, ca, 2, 1, withConfig(cfg))
		rollImage(t, f.key, clusterClient(t, f.service(), ca.CertPEM), imageNameOf(cfg), "9.1.2", 2)
		f.waitServing(ca.CertPEM, f.leaf, time.Minute)
	})
}

// rollImage moves image to version under client load on c and checks what
// a roll promises: every node replaced and running version, not one failed
// request, one failover per shard, the shards' slots unchanged, every key
// written before and every acknowledged write read back.
func rollImage(t *testing.T, key client.ObjectKey, c valkey.Client, image, version string, shards int) {
	t.Helper()
	ctx := context.Background()
	before := writeKeys(t, c, "before", 1000)
	waitReplicated(t, c)
	vc := getCluster(t, key)
	oldNodes, oldSlots := slices.Clone(vc.Status.Nodes), shardSlots(vc)
	failovers := countEvents(t, key, string(topology.KindFailover), "")

	load := startLoad(c, "load")
	start := time.Now()
	eventually(t, 30*time.Second, "editing the image", func() error {
		var img valkeyv1.ValkeyImage
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: image}, &img); err != nil {
			return err
		}
		img.Spec.Tag, img.Spec.Version = version, version
		return k8sClient.Update(ctx, &img)
	})
	eventually(t, 8*time.Minute, "every node replaced", func() error {
		vc := getCluster(t, key)
		for _, n := range vc.Status.Nodes {
			if slices.Contains(oldNodes, n) {
				return fmt.Errorf("%s not replaced yet; state %s, %v", n, vc.Status.State, conditionSummary(vc))
			}
		}
		return nil
	})
	vc = waitConverged(t, key, shards, 1, 5*time.Minute)
	t.Logf("every node on %s after %s", version, time.Since(start).Round(time.Second))
	acked := load.finishUndisturbed(t)

	if got := shardSlots(vc); !maps.Equal(got, oldSlots) {
		t.Fatalf("shards' slots changed: %v, were %v", got, oldSlots)
	}
	if n := countEvents(t, key, string(topology.KindFailover), "") - failovers; n != shards {
		t.Fatalf("%d Failover Events during the roll, want one per shard (%d)", n, shards)
	}
	assertNodesRun(t, key.Namespace, vc.Status.Nodes, version)
	checkAll(t, c, before)
	checkAll(t, c, acked)
	assertNoDataLoss(t, key)
}

// downgradeRefusedThenUndone stores a hash whose field has its own expiry
// (Valkey 9), which Valkey 8 cannot load from a sync, rolls image down to
// 8.0.1, and waits for the roll to be held with DowngradeBlocked: the old
// nodes all in place and serving every key. The image set back to 9.1.2,
// the stuck replica is retired and the cluster converges with every key.
func downgradeRefusedThenUndone(t *testing.T, key client.ObjectKey, image string) {
	t.Helper()
	ctx := context.Background()
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 500)
	if err := c.Do(ctx, c.B().Hset().Key("fields").FieldValue().FieldValue("a", "1").FieldValue("b", "2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Arbitrary("HEXPIRE").Keys("fields").Args("3600", "FIELDS", "1", "a").Build()).Error(); err != nil {
		t.Fatalf("HEXPIRE on Valkey 9: %v", err)
	}
	waitReplicated(t, c)
	oldNodes := slices.Clone(getCluster(t, key).Status.Nodes)
	setImage := func(version string) {
		eventually(t, 30*time.Second, "editing the image", func() error {
			var img valkeyv1.ValkeyImage
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: image}, &img); err != nil {
				return err
			}
			img.Spec.Tag, img.Spec.Version = version, version
			return k8sClient.Update(ctx, &img)
		})
	}

	setImage("8.0.1")
	eventually(t, 4*time.Minute, "the downgrade held", func() error {
		vc := getCluster(t, key)
		c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondVersionMatches)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != valkeyv1.ReasonDowngradeBlocked {
			return fmt.Errorf("VersionMatches not False/%s: %v", valkeyv1.ReasonDowngradeBlocked, conditionSummary(vc))
		}
		return nil
	})
	assertEvent(t, key, valkeyv1.ReasonDowngradeBlocked, "has not loaded the data of its primary")
	vc := getCluster(t, key)
	for _, n := range oldNodes {
		if !slices.Contains(vc.Status.Nodes, n) {
			t.Fatalf("node %s retired by a held downgrade; nodes now %v", n, vc.Status.Nodes)
		}
	}
	checkAll(t, c, before)

	setImage("9.1.2")
	vc = waitConverged(t, key, 1, 1, 5*time.Minute)
	if c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondVersionMatches); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("VersionMatches after the image was set back: %v", conditionSummary(vc))
	}
	checkAll(t, c, before)
	got, err := c.Do(ctx, c.B().Hgetall().Key("fields").Build()).AsStrMap()
	if err != nil || got["a"] != "1" || got["b"] != "2" {
		t.Fatalf("hash after the undone downgrade: %v, %v", got, err)
	}
	assertNoDataLoss(t, key)
}
