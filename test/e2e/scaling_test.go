package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Valkey 8 has no atomic slot migration: shard scaling moves the slots with
// SETSLOT and MIGRATE, key by key, while a client keeps writing and reading.
// With a replica per shard, out 3 -> 6, then in 6 -> 2: every slot
// served, evenly, by exactly the asked-for nodes, and every write the
// client saw acknowledged is there.
func TestClassicShardScaling(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "scale8", "cache", 3, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 3000)

	scaleShardsUnderLoad(t, key, c, before, 1, 3, 6, 2)
}

// scaleShardsUnderLoad edits spec.shards through each count in turn while a
// client writes and reads, and checks every slot is served, evenly, and
// every key is there after each step.
func scaleShardsUnderLoad(t *testing.T, key client.ObjectKey, c valkey.Client, before map[string]string, replicas int, counts ...int) {
	t.Helper()
	for i := 1; i < len(counts); i++ {
		from, to := counts[i-1], counts[i]
		load := startLoad(c, fmt.Sprintf("load-%d", to))
		start := time.Now()
		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = int32(to) })
		vc := waitConverged(t, key, to, replicas, 5*time.Minute)
		t.Logf("%d -> %d shards: Active with %d nodes after %s", from, to, len(vc.Status.Nodes), time.Since(start).Round(time.Second))
		acked := load.finishUndisturbed(t)
		assertEvenSlots(t, key.Namespace, vc, to)
		checkAll(t, c, before)
		checkAll(t, c, acked)
		assertKeysOnEveryShard(t, c, to)
	}
}

// On Valkey 9 every node has CLUSTER MIGRATESLOTS: the same scaling moves
// slots atomically, replicas following through CLUSTER SYNCSLOTS, and never
// falls back to SETSLOT and MIGRATE.
func TestAtomicShardScaling(t *testing.T) {
	t.Parallel()
	const ns = "scale9"
	createNamespace(t, ns)
	key := newClusterWith(t, ns, "cache", createACLMenu(t, ns, "9.1.2"), 3, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 3000)

	scaleShardsUnderLoad(t, key, c, before, 1, 3, 5, 2)
	atomic := countEvents(t, key, "MigrateSlots", "by CLUSTER MIGRATESLOTS")
	classic := countEvents(t, key, "MigrateSlots", "by SETSLOT and MIGRATE")
	t.Logf("slot moves: %d by CLUSTER MIGRATESLOTS, %d by SETSLOT and MIGRATE", atomic, classic)
	if atomic == 0 || classic != 0 {
		t.Fatalf("slot moves on Valkey 9: %d atomic, %d classic; want only atomic", atomic, classic)
	}
}

// Replicas are added and removed one at a time, down to none and back;
// no slot moves and no key is lost.
func TestReplicaScaling(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "replicas8", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)

	for _, replicas := range []int{2, 0, 1} {
		load := startLoad(c, "load-"+string(rune('a'+replicas)))
		start := time.Now()
		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.ReplicasPerShard = int32(replicas) })
		vc := waitConverged(t, key, 2, replicas, 5*time.Minute)
		t.Logf("replicasPerShard -> %d: Active with %d nodes after %s", replicas, len(vc.Status.Nodes), time.Since(start).Round(time.Second))
		acked := load.finishUndisturbed(t)
		checkAll(t, c, before)
		checkAll(t, c, acked)
	}
}

// A one-shard cache grows to sixteen shards and shrinks to three on Valkey
// 9: the one source gives every new shard its share in one wave, and on the
// way back thirteen drained shards give to the three that stay. Every slot
// ends evenly served and every key is kept.
func TestAtomicScalingOneToSixteen(t *testing.T) {
	t.Parallel()
	const ns = "scale16"
	createNamespace(t, ns)
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: createACLMenu(t, ns, "9.1.2"), Shards: 1},
	}
	if err := k8sClient.Create(context.Background(), vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	key := client.ObjectKeyFromObject(vc)
	waitConverged(t, key, 1, 0, 5*time.Minute)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 5000)

	scaleShardsUnderLoad(t, key, c, before, 0, 1, 16, 3)
}
