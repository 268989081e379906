package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

const (
	// rollCrashKeys is the data set a fresh replica has to copy before it
	// holds anything.
	rollCrashKeys = 4000
	// rollCrashKeyDelay slows the primary's snapshot for its replicas
	// (Valkey's rdb-key-save-delay, in microseconds per key): 10 ms a key
	// stretches a full sync of the data set over 40 s at least, so the
	// test surely sees it under way and kills the primary inside it rather
	// than racing a copy that takes milliseconds.
	rollCrashKeyDelay = "10000"
	// rollCrashMaxMemory is the config edit that rolls the cluster (with
	// restartOnlyKey, as maxmemory alone is applied in place), and
	// rollCrashMaxMemoryBytes how a node that took it reports it.
	rollCrashMaxMemory      = "96mb"
	rollCrashMaxMemoryBytes = 96 << 20
)

// A primary crashes during a roll, while the roll's fresh replica is still
// in its initial sync and the old replica holds every key. With a single
// shard there is no quorum, so the operator has to pick the replica to
// take over itself; the fresh one, preferred for being up to date, is
// empty until its sync ends, and promoting it would make the old replica
// resync from it and drop every key. Only the replica that finished its
// sync may take over: every key written before, and every write
// acknowledged outside the documented loss window of a crashed primary,
// must survive, and the roll must still complete with nothing reported
// lost.
func TestPrimaryCrashDuringRollKeepsData(t *testing.T) {
	t.Parallel()
	const ns = "roll-crash"
	key := newPlainCluster(t, ns, "cache", 1, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", rollCrashKeys)
	waitReplicated(t, c)
	ctx := context.Background()

	vc := getCluster(t, key)
	primary, synced := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[0].Replicas[0]
	old := slices.Clone(vc.Status.Nodes)
	// Only the primary is slowed: after the crash the survivors' full
	// syncs run at full speed, so the roll finishes within the test's
	// patience.
	n, err := dialPod(ns, primary)
	if err != nil {
		t.Fatal(err)
	}
	err = n.ConfigSet(ctx, "rdb-key-save-delay", rollCrashKeyDelay)
	n.Close()
	if err != nil {
		t.Fatal(err)
	}

	load := startLoad(c, "load")
	var cfg valkeyv1.ValkeyConfig
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: menuConfigName(ns)}, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Spec.Valkey["maxmemory"] = rollCrashMaxMemory
	cfg.Spec.Valkey[restartOnlyKey] = restartOnlyValue
	if err := k8sClient.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}

	var fresh string
	eventually(t, 3*time.Minute, "the roll's fresh replica in its initial sync from "+primary+", "+synced+" synced", func() error {
		var nodes valkeyv1.ValkeyNodeList
		if err := k8sClient.List(ctx, &nodes, client.InNamespace(ns), client.MatchingLabels{valkeyv1.LabelInstance: key.Name}); err != nil {
			return err
		}
		fresh = ""
		for _, n := range nodes.Items {
			if n.Spec.ValkeySettings["maxmemory"] == rollCrashMaxMemory {
				fresh = n.Name
			}
		}
		if fresh == "" {
			return fmt.Errorf("no node of the new config yet; state %s", getCluster(t, key).Status.State)
		}
		f, err := replicationOf(ns, fresh)
		if err != nil {
			return err
		}
		if f.Role != vk.RoleReplica || !f.PrimarySyncInProgress {
			return fmt.Errorf("fresh replica %s: role %s, link %q, sync in progress %v", fresh, f.Role, f.PrimaryLinkStatus, f.PrimarySyncInProgress)
		}
		r, err := replicationOf(ns, synced)
		if err != nil {
			return err
		}
		if !r.LinkUp() {
			return fmt.Errorf("old replica %s: role %s, link %q, sync in progress %v", synced, r.Role, r.PrimaryLinkStatus, r.PrimarySyncInProgress)
		}
		return nil
	})
	killedAt := time.Now()
	fail(t, ns, primary, processKilled)
	t.Logf("killed primary %s while %s was in its initial sync from it and %s was synced", primary, fresh, synced)

	// The old replica is asked first: should both claim the slots, the
	// fresh one can only have got there by a later, planned handover.
	var promoted string
	eventually(t, 2*time.Minute, "a replica of "+primary+" promoted", func() error {
		for _, name := range []string{synced, fresh} {
			if servesSlots(ns, name) {
				promoted = name
				return nil
			}
		}
		return fmt.Errorf("neither %s nor %s serves the slots yet", synced, fresh)
	})
	t.Logf("%s promoted in place of %s; keyspace %s", promoted, primary, keyspaceOf(ns, promoted))
	if promoted != synced {
		t.Errorf("%s, still in its initial sync when %s crashed, was promoted instead of the synced replica %s", promoted, primary, synced)
	}

	eventually(t, 6*time.Minute, "every node of the old config replaced", func() error {
		vc := getCluster(t, key)
		for _, n := range vc.Status.Nodes {
			if slices.Contains(old, n) {
				return fmt.Errorf("%s not replaced yet; state %s, conditions %v", n, vc.Status.State, conditionSummary(vc))
			}
		}
		return nil
	})
	vc = waitConverged(t, key, 1, 1, 5*time.Minute)
	acked := load.finish(t)
	for _, name := range vc.Status.Nodes {
		n, err := dialPod(ns, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := n.InfoNode(ctx)
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
		if info.Memory.MaxMemory != rollCrashMaxMemoryBytes {
			t.Fatalf("node %s runs with maxmemory %d, want %d", name, info.Memory.MaxMemory, rollCrashMaxMemoryBytes)
		}
	}

	// DataLost is a record that stays True once set, and its Event is
	// kept, so reading both now covers the whole run.
	if dl := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondDataLost); dl != nil && dl.Status == metav1.ConditionTrue {
		t.Errorf("DataLost True (%s): %s", dl.Reason, dl.Message)
	}
	if n := countEvents(t, key, valkeyv1.ReasonPrimaryLostNoReplica, ""); n != 0 {
		t.Errorf("%d %s Events: a replica held every key", n, valkeyv1.ReasonPrimaryLostNoReplica)
	}
	checkAll(t, c, before)
	checkAckedAroundKill(t, c, load, acked, killedAt)
}

// replicationOf is a pod's INFO REPLICATION, asked of the node itself.
func replicationOf(ns, name string) (vk.ReplicationInfo, error) {
	n, err := dialPod(ns, name)
	if err != nil {
		return vk.ReplicationInfo{}, err
	}
	defer n.Close()
	return n.InfoReplication(context.Background())
}

// servesSlots says whether a pod, by its own account, is a primary owning
// slots; false too when it cannot be asked.
func servesSlots(ns, name string) bool {
	n, err := dialPod(ns, name)
	if err != nil {
		return false
	}
	defer n.Close()
	nodes, err := n.ClusterNodes(context.Background())
	if err != nil {
		return false
	}
	me, _ := nodes.Myself()
	return me.IsPrimary() && me.SlotCount() > 0
}

// keyspaceOf describes how many keys a pod holds, for the log: INFO
// KEYSPACE's db0 line, "empty" without one.
func keyspaceOf(ns, name string) string {
	n, err := dialPod(ns, name)
	if err != nil {
		return err.Error()
	}
	defer n.Close()
	info, err := n.Info(context.Background(), "keyspace")
	if err != nil {
		return err.Error()
	}
	if db0, ok := info["keyspace"]["db0"]; ok {
		return db0
	}
	return "empty"
}
