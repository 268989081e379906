package e2e

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// The operator, run as its own process the way its Deployment runs it, is
// killed with SIGKILL in the middle of a step (no deferred cleanup, no
// lease released), and a new process carries on from what the API and
// Valkey hold: the step completes, the shape converges, and every key
// written before and every write acknowledged meanwhile is read back.
// Not parallel: it stops the operator every other test relies on.
func TestChaosOperatorSIGKILLedMidStep(t *testing.T) {
	bin, kubeconfig := operatorProcessesInstead(t)
	const leaseNS = "opkill-operator"
	createNamespace(t, leaseNS)
	op := startOperatorProcess(t, bin, kubeconfig, leaseNS, "first")

	key := newPlainCluster(t, "opkill", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 3000)
	waitReplicated(t, c)

	steps := []struct {
		what   string
		change func(vc *valkeyv1.ValkeyCluster)
		// event is the reason of the Event the step's first action
		// records: the operator dies right after it.
		event          string
		shards, copies int
	}{
		{"a classic slot migration", func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 }, string(topology.KindMigrateSlots), 3, 1},
		{"a replica attach", func(vc *valkeyv1.ValkeyCluster) { vc.Spec.ReplicasPerShard = 2 }, string(topology.KindReplicate), 3, 2},
	}
	for i, step := range steps {
		load := startLoad(c, "during-"+step.what)
		seen := countEvents(t, key, step.event, "")
		updateCluster(t, key, step.change)
		eventually(t, 3*time.Minute, "the first "+step.event+" of "+step.what, func() error {
			if countEvents(t, key, step.event, "") == seen {
				return errorf("no new %s Event yet", step.event)
			}
			return nil
		})
		if err := op.cmd.Process.Kill(); err != nil {
			t.Fatalf("SIGKILL to the operator: %v", err)
		}
		_ = op.cmd.Wait()
		t.Logf("operator SIGKILLed during %s", step.what)
		op = startOperatorProcess(t, bin, kubeconfig, leaseNS, "after-"+string(rune('a'+i)))
		waitConverged(t, key, step.shards, step.copies, 5*time.Minute)
		acked := load.finish(t)
		checkAll(t, c, before)
		checkAll(t, c, acked)
		assertNoDataLoss(t, key)
	}
}

// assertNoDataLoss fails if the cluster ever reported losing keys.
func assertNoDataLoss(t testing.TB, key client.ObjectKey) {
	t.Helper()
	if n := countEvents(t, key, valkeyv1.ReasonPrimaryLostNoReplica, ""); n > 0 {
		t.Fatalf("%d data-loss Events", n)
	}
}
