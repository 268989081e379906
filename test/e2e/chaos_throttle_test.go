package e2e

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// The throttled operator's API client: every request of every controller,
// the cache's and the Event recorder's included, draws from one bucket of
// throttleQPS requests a second (burst throttleBurst), a quarter of
// controller-runtime's default 20 (burst 30) for one client. The suite's
// operator asks for more than that throughout the scale-out (it samples
// every node and advances metering every 2 s besides the resharding), so
// every request waits its turn; a smaller bucket only lengthens the wait.
const (
	throttleQPS   = 5
	throttleBurst = 10
)

// An operator starved of API requests, as a crowded API server's priority
// and fairness or a low --kube-api-qps leaves it: it scales a 2x1 Valkey 8
// cluster (classic resharding, a wave per batch of slots, each wave
// writing status and Events) to 3 shards under client load. Everything
// takes longer; nothing may go wrong: it converges with even slots and
// every write readable.
// Not parallel: it replaces the operator every other test relies on.
func TestChaosThrottledOperator(t *testing.T) {
	key := newPlainCluster(t, "chaos-throttle", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)

	restartOperatorWith(t, func(cfg *rest.Config) {
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(throttleQPS, throttleBurst)
	})
	t.Cleanup(func() { restartOperator(t) })

	load := startLoad(c, "throttled")
	start := time.Now()
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
	vc := waitConverged(t, key, 3, 1, 15*time.Minute)
	t.Logf("2 -> 3 shards with the operator limited to %d API requests a second (burst %d): converged after %s, %d slot batch Events",
		throttleQPS, throttleBurst, time.Since(start).Round(time.Second), countEvents(t, key, "MigrateSlots", ""))
	acked := load.finish(t)
	assertEvenSlots(t, key.Namespace, vc, 3)
	checkAll(t, c, before)
	checkAll(t, c, acked)
	assertNoSlotInFlight(t, key)
}
