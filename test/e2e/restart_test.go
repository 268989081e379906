package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// The operator killed in the middle of a workflow remembers nothing; the new
// one rediscovers the cluster from the API and from Valkey and finishes the
// work with every acknowledged write intact: a scale-out with slots in
// flight, a scale-in draining a shard, a roll between two failovers, and a
// recovery from a lost primary.
// Not parallel: it restarts the operator every other test relies on.
func TestOperatorRestartMidWorkflow(t *testing.T) {
	key := newPlainCluster(t, "restart", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)

	// waitMoving waits until at least n slot batches have moved, so the
	// restart lands in the middle of the resharding.
	waitMoving := func(n int) {
		eventually(t, 3*time.Minute, fmt.Sprintf("%d slot batches to move", n), func() error {
			if got := countEvents(t, key, "MigrateSlots", ""); got < n {
				return fmt.Errorf("%d slot batches moved", got)
			}
			return nil
		})
	}

	t.Run("scale-out", func(t *testing.T) {
		load := startLoad(c, "restart-out")
		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
		waitMoving(2)
		restartOperator(t)
		vc := waitConverged(t, key, 3, 1, 5*time.Minute)
		acked := load.finish(t)
		assertEvenSlots(t, key.Namespace, vc, 3)
		checkAll(t, c, before)
		checkAll(t, c, acked)
	})

	t.Run("scale-in", func(t *testing.T) {
		moved := countEvents(t, key, "MigrateSlots", "")
		load := startLoad(c, "restart-in")
		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 2 })
		waitMoving(moved + 2)
		restartOperator(t)
		vc := waitConverged(t, key, 2, 1, 5*time.Minute)
		acked := load.finish(t)
		assertEvenSlots(t, key.Namespace, vc, 2)
		checkAll(t, c, before)
		checkAll(t, c, acked)
	})

	t.Run("roll", func(t *testing.T) {
		old := getCluster(t, key).Status.Nodes
		failovers := countEvents(t, key, "Failover", "")
		load := startLoad(c, "restart-roll")
		var cfg valkeyv1.ValkeyConfig
		if err := k8sClient.Get(t.Context(), client.ObjectKey{Name: "standard-restart"}, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg.Spec.Valkey["maxmemory"] = "96mb"
		cfg.Spec.Valkey[restartOnlyKey] = restartOnlyValue
		if err := k8sClient.Update(t.Context(), &cfg); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "the roll's first failover", func() error {
			if countEvents(t, key, "Failover", "") == failovers {
				return fmt.Errorf("no failover yet")
			}
			return nil
		})
		restartOperator(t)
		eventually(t, 5*time.Minute, "every node replaced", func() error {
			vc := getCluster(t, key)
			for _, n := range vc.Status.Nodes {
				if slices.Contains(old, n) {
					return fmt.Errorf("node %s not replaced yet", n)
				}
			}
			return nil
		})
		waitConverged(t, key, 2, 1, 5*time.Minute)
		// The restarted operator finds the first failover recorded on its
		// node and does not repeat it.
		if n := countEvents(t, key, "Failover", "") - failovers; n != 2 {
			t.Fatalf("%d Failover Events during the roll, want one per shard (2)", n)
		}
		acked := load.finish(t)
		checkAll(t, c, before)
		checkAll(t, c, acked)
	})

	t.Run("recovery", func(t *testing.T) {
		vc := getCluster(t, key)
		lost := vc.Status.ShardStatuses[0].Primary
		load := startLoad(c, "restart-recovery")
		fail(t, key.Namespace, lost, processKilled)
		restartOperator(t)
		waitReplaced(t, key, lost, 2, 1)
		acked := load.finish(t)
		checkAll(t, c, before)
		checkAll(t, c, acked)
	})
}
