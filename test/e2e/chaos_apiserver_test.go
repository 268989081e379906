package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// apiServerOutage is how long the chaos test keeps the API server away:
// long enough that the operator's retries of its failed reconciles reach
// their longest backoff (5 s in the suite, after 0.5, 1, 2 and 4 s) and its
// informers' watches fail and back off; well short of the nodes' 50 s
// grace, past which the outage would also be the loss of every node
// (TestChaosNodeHeartbeatLost provokes that for one).
const apiServerOutage = 10 * time.Second

// The API server gone for apiServerOutage, once while the cluster is steady
// and once in the middle of a classic scale-out (Valkey 8, so the operator
// drives every slot itself). Valkey needs no API: the data plane keeps
// serving, every write acknowledged during the outage included. The
// operator's writes fail meanwhile and it retries; once the API server is
// back it converges, the scale-out finishing with even slots, and every
// write is readable.
// Not parallel: it takes the API server away from every other test.
func TestChaosAPIServerDown(t *testing.T) {
	key := newPlainCluster(t, "chaos-apiserver", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)

	t.Run("steady", func(t *testing.T) {
		load := startLoad(c, "apiserver-steady")
		eventually(t, time.Minute, "the client writing", func() error {
			if n := load.writes.Load(); n < 100 {
				return fmt.Errorf("%d writes acknowledged", n)
			}
			return nil
		})
		from, to := stopAPIServer(t, apiServerOutage)
		vc := waitConverged(t, key, 2, 1, 3*time.Minute)
		acked := load.finish(t)
		assertServedThrough(t, load, from, to)
		checkAll(t, c, before)
		checkAll(t, c, acked)
		t.Logf("members after the outage: %v", vc.Status.Nodes)
	})

	t.Run("scale-out", func(t *testing.T) {
		moved := countEvents(t, key, "MigrateSlots", "")
		load := startLoad(c, "apiserver-scale")
		start := time.Now()
		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
		eventually(t, 3*time.Minute, "slots moving", func() error {
			if n := countEvents(t, key, "MigrateSlots", ""); n < moved+2 {
				return fmt.Errorf("%d slot batches moved", n-moved)
			}
			return nil
		})
		from, to := stopAPIServer(t, apiServerOutage)
		vc := waitConverged(t, key, 3, 1, 5*time.Minute)
		t.Logf("2 -> 3 shards with a %s API server outage: converged %s after the edit", apiServerOutage, time.Since(start).Round(time.Second))
		acked := load.finish(t)
		assertServedThrough(t, load, from, to)
		assertEvenSlots(t, key.Namespace, vc, 3)
		checkAll(t, c, before)
		checkAll(t, c, acked)
		assertNoSlotInFlight(t, key)
	})
}

// stopAPIServer takes the API server away for d and brings it back, then
// waits until it answers and every Kubernetes node is still Ready. It
// returns when the outage began and ended.
func stopAPIServer(t *testing.T, d time.Duration) (from, to time.Time) {
	t.Helper()
	if err := local.ControlPlane.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	from = time.Now()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = local.ControlPlane.StartAPIServer()
		}
	})
	// The outage is what the test provokes, not a wait for the operator.
	time.Sleep(d)
	if err := local.ControlPlane.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	to = time.Now()
	t.Logf("API server away for %s (%s to come back)", to.Sub(from).Round(100*time.Millisecond), (to.Sub(from) - d).Round(100*time.Millisecond))
	eventually(t, time.Minute, "every Kubernetes node Ready", func() error {
		var nodes corev1.NodeList
		if err := k8sClient.List(context.Background(), &nodes); err != nil {
			return err
		}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
					return fmt.Errorf("node %s Ready=%s (%s)", n.Name, c.Status, c.Reason)
				}
			}
		}
		return nil
	})
	return from, to
}

// assertServedThrough checks that the data plane served writes while the
// API server was away.
func assertServedThrough(t testing.TB, load *clientLoad, from, to time.Time) {
	t.Helper()
	during := load.ackedBetween(from, to)
	t.Logf("writes acknowledged while the API server was away: %d", during)
	if during == 0 {
		t.Fatalf("no write was acknowledged while the API server was away")
	}
}
