package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// chaosMigrationKeys is the data set the interrupted scale-out moves: enough
// that CLUSTER MIGRATESLOTS jobs are seen running, not only finished.
const chaosMigrationKeys = 50000

// The operator killed while Valkey 9 moves slots by itself: a 2x1 cluster
// holding 50,000 keys of 1 KiB scales to 3 shards under client load, and
// the operator is stopped the moment a source reports a CLUSTER
// MIGRATESLOTS job still running (its context cancelled mid-call, as a
// SIGKILL would leave it), then a new one starts knowing nothing. The jobs
// run on in Valkey; the new operator must find them through CLUSTER
// GETSLOTMIGRATIONS, neither start a second move of the same slots nor
// fall back to SETSLOT and MIGRATE, and finish with even slots, every key
// written before and every acknowledged write readable.
// Not parallel: it restarts the operator every other test relies on.
func TestChaosOperatorKilledMidMigrateSlots(t *testing.T) {
	const ns = "chaos-migrateslots"
	createNamespace(t, ns)
	key := newClusterWith(t, ns, "cache", createACLMenu(t, ns, "9.1.2"), 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	writeDataSet(t, c, chaosMigrationKeys)
	data := dataSet(chaosMigrationKeys)

	sources := dialPrimaries(t, key)
	failedBefore := countEvents(t, key, "ActionFailed", "")
	load := startLoad(c, "chaos-mig")
	start := time.Now()
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
	job := catchAtomicMigration(t, sources, 3*time.Minute)
	restartOperator(t)
	t.Logf("operator restarted %s after the edit, while %s (%d slots) was %q; after the restart: %s",
		time.Since(start).Round(time.Millisecond), job.Name, vk.CountSlots(job.SlotRanges), job.State, migrationStates(sources))

	vc := waitConverged(t, key, 3, 1, 5*time.Minute)
	t.Logf("2 -> 3 shards with the operator killed mid-migration: converged %s after the edit", time.Since(start).Round(time.Second))
	acked := load.finish(t)
	assertEvenSlots(t, ns, vc, 3)
	checkAll(t, c, data)
	checkAll(t, c, acked)
	assertNoSlotInFlight(t, key)
	t.Logf("jobs on the sources: %s", migrationStates(sources))
	if n := countEvents(t, key, "MigrateSlots", "by SETSLOT and MIGRATE"); n != 0 {
		t.Errorf("%d classic slot moves on Valkey 9, want only CLUSTER MIGRATESLOTS", n)
	}
	if n := countEvents(t, key, "ActionFailed", "") - failedBefore; n != 0 {
		t.Errorf("%d actions failed after the restart (a second move of slots already in flight?)", n)
	}
}

// catchAtomicMigration polls the sources until one reports a CLUSTER
// MIGRATESLOTS export that has not finished, and returns it.
func catchAtomicMigration(t testing.TB, sources []*vk.Node, timeout time.Duration) vk.SlotMigration {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range sources {
			jobs, err := n.ClusterGetSlotMigrations(context.Background())
			if err != nil {
				continue
			}
			for _, j := range jobs {
				if j.Operation == vk.SlotMigrationExport && !j.Finished() {
					return j
				}
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no CLUSTER MIGRATESLOTS job seen running within %s", timeout)
	return vk.SlotMigration{}
}

// migrationStates lists every export job the sources report with its
// state, for the log.
func migrationStates(sources []*vk.Node) string {
	var out []string
	for _, n := range sources {
		jobs, err := n.ClusterGetSlotMigrations(context.Background())
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", n.Address(), err))
			continue
		}
		for _, j := range jobs {
			if j.Operation == vk.SlotMigrationExport {
				out = append(out, fmt.Sprintf("%s %d slots %s%s", j.Name, vk.CountSlots(j.SlotRanges), j.State, strings.TrimSpace(" "+j.Message)))
			}
		}
	}
	return strings.Join(out, "; ")
}
