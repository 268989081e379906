package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// cancelKeys is the data set of the interrupted moves; the slowed snapshot
// (slowMigrationConfig) stretches each source's job over a few seconds.
const cancelKeys = 12000

// slowMigrationConfig makes every source produce its CLUSTER MIGRATESLOTS
// snapshot slowly (Valkey's rdb-key-save-delay, in microseconds per key),
// so a job is surely still running when the test acts on it instead of
// racing a move that takes a few milliseconds. At 4 ms a key each job
// takes about 16 s, room for an operator slowed by a loaded machine to
// notice the reversal before the jobs end.
var slowMigrationConfig = map[string]string{"rdb-key-save-delay": "4000"}

// A scale-out reversed mid-move and a target lost mid-move, on Valkey 9:
// a 3x0 cluster holding 12,000 keys scales to 4 shards under client load.
// While the CLUSTER MIGRATESLOTS jobs into the new shard run, the shard
// count goes back to 3: the operator cancels the jobs on every source
// (CLUSTER CANCELSLOTMIGRATIONS) instead of finishing the move only to
// drain it back, and the new shard leaves without ever owning a slot.
// Then the cluster scales to 4 again and the new shard's primary is
// killed mid-move: the jobs fail on the sources, which keep their slots,
// and the operator replaces the shard and moves the slots to it. Each time
// no slot is left half-owned and every key written before and every
// acknowledged write is read back.
func TestReshardCancelledAndTargetLost(t *testing.T) {
	t.Parallel()
	const ns = "reshard-cancel"
	createNamespace(t, ns)
	cfg := createConfig(t, "slow-migration", "9.1.2", valkeyv1.ValkeyConfigSpec{Valkey: slowMigrationConfig})
	key := newClusterWith(t, ns, "cache", cfg, 3, 0)
	c := clusterClient(t, seedOf(key), nil)
	writeDataSet(t, c, cancelKeys)
	data := dataSet(cancelKeys)
	sources := dialPrimaries(t, key)
	load := startLoad(c, "cancel")

	// Reversed: 3 -> 4 -> 3 while the jobs run.
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 4 })
	job := catchAtomicMigration(t, sources, 3*time.Minute)
	target := nodeNameByID(t, key, job.TargetNode)
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
	t.Logf("shard count lowered back while %s (%d slots to %s) was %q", job.Name, vk.CountSlots(job.SlotRanges), target, job.State)
	vc := waitConverged(t, key, 3, 0, 5*time.Minute)
	states := migrationStates(sources)
	t.Logf("jobs on the sources: %s", states)
	if !strings.Contains(states, vk.SlotMigrationCancelled) {
		t.Errorf("no source reports a cancelled job: %s", states)
	}
	if n := countEvents(t, key, "CancelMigrations", ""); n == 0 {
		t.Error("no CancelMigrations Event")
	}
	if n := countEvents(t, key, "MigrateSlots", target+" -> "); n != 0 {
		t.Errorf("%d slot moves out of %s: it gained slots the reversal had to move back", n, target)
	}
	assertEvenSlots(t, ns, vc, 3)
	assertNoSlotInFlight(t, key)
	checkAll(t, c, data)

	// Target lost: 3 -> 4, the new primary killed while the jobs run.
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 4 })
	job = catchAtomicMigration(t, sources, 3*time.Minute)
	target = nodeNameByID(t, key, job.TargetNode)
	fail(t, ns, target, processKilled)
	t.Logf("killed %s while %s (%d slots) was %q", target, job.Name, vk.CountSlots(job.SlotRanges), job.State)
	vc = waitConverged(t, key, 4, 0, 5*time.Minute)
	t.Logf("jobs on the sources: %s", migrationStates(sources))
	if slices.Contains(vc.Status.Nodes, target) {
		t.Errorf("the killed target %s is still a member: %v", target, vc.Status.Nodes)
	}
	acked := load.finish(t)
	assertEvenSlots(t, ns, vc, 4)
	assertNoSlotInFlight(t, key)
	checkAll(t, c, data)
	checkAll(t, c, acked)
}
