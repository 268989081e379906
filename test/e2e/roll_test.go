package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// An image edit (Valkey 8.0.1 -> 9.1.2) and then a valkey map edit that
// needs a restart each
// replace every node, one shard at a time, with exactly one failover per
// shard; shards keep their slots and every key, under client load.
func TestRollingReplacement(t *testing.T) {
	t.Parallel()
	const shards, replicas = 2, 1
	key := newPlainCluster(t, "roll", "cache", shards, replicas)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	ctx := context.Background()

	steps := []struct {
		what    string
		version string
		edit    func()
	}{
		{"image 8.0.1 -> 9.1.2", "9.1.2", func() {
			var img valkeyv1.ValkeyImage
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: menuImageName("roll")}, &img); err != nil {
				t.Fatal(err)
			}
			img.Spec.Tag, img.Spec.Version = "9.1.2", "9.1.2"
			if err := k8sClient.Update(ctx, &img); err != nil {
				t.Fatal(err)
			}
		}},
		{"valkey map maxmemory 64mb -> 96mb with tcp-backlog, which needs a restart", "9.1.2", func() {
			var cfg valkeyv1.ValkeyConfig
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: "standard-roll"}, &cfg); err != nil {
				t.Fatal(err)
			}
			cfg.Spec.Valkey["maxmemory"] = "96mb"
			cfg.Spec.Valkey[restartOnlyKey] = restartOnlyValue
			if err := k8sClient.Update(ctx, &cfg); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, step := range steps {
		vc := getCluster(t, key)
		oldNodes := slices.Clone(vc.Status.Nodes)
		oldSlots := shardSlots(vc)
		failovers := countEvents(t, key, string(topology.KindFailover), "")
		load := startLoad(c, "load-"+step.version+"-"+fmt.Sprint(len(oldNodes)))
		start := time.Now()
		step.edit()
		sawUpdating := false
		eventually(t, 6*time.Minute, "every node replaced after "+step.what, func() error {
			vc := getCluster(t, key)
			sawUpdating = sawUpdating || vc.Status.State == valkeyv1.StateUpdating
			for _, n := range vc.Status.Nodes {
				if slices.Contains(oldNodes, n) {
					return fmt.Errorf("%s not replaced yet; state %s", n, vc.Status.State)
				}
			}
			return nil
		})
		vc = waitConverged(t, key, shards, replicas, 5*time.Minute)
		t.Logf("%s: every node replaced in %s", step.what, time.Since(start).Round(time.Second))
		acked := load.finishUndisturbed(t)

		if got := shardSlots(vc); !maps.Equal(got, oldSlots) {
			t.Fatalf("shards' slots changed: %v, were %v", got, oldSlots)
		}
		if !sawUpdating {
			t.Fatalf("state never Updating during %s", step.what)
		}
		for _, change := range []string{"Active -> Updating: ", "Updating -> Active: "} {
			if countEvents(t, key, valkeyv1.ReasonStateChanged, change) == 0 {
				t.Fatalf("no StateChanged Event %q", change)
			}
		}
		// Every shard's primary was handed over exactly once.
		if n := countEvents(t, key, string(topology.KindFailover), "") - failovers; n != shards {
			t.Fatalf("%d Failover Events during the roll, want one per shard (%d)", n, shards)
		}
		assertNodesRun(t, key.Namespace, vc.Status.Nodes, step.version)
		checkAll(t, c, before)
		checkAll(t, c, acked)
	}
}

func shardSlots(vc *valkeyv1.ValkeyCluster) map[int32]string {
	out := map[int32]string{}
	for _, s := range vc.Status.ShardStatuses {
		out[s.Index] = s.Slots
	}
	return out
}

// assertNodesRun fails unless every node answers INFO server with version.
func assertNodesRun(t testing.TB, ns string, nodes []string, version string) {
	t.Helper()
	for _, name := range nodes {
		n, err := dialPod(ns, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := n.InfoServer(context.Background())
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
		if info.Version.String() != version {
			t.Fatalf("node %s runs %s, want %s", name, info.Version, version)
		}
	}
}
