package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// failureMode is how a member is lost: its pod deleted (a drain or an
// eviction) or its process killed in place (a crash; with restartPolicy
// Never the pod ends Failed).
type failureMode string

const (
	podDeleted    failureMode = "pod deleted"
	processKilled failureMode = "process killed"
)

var failureModes = []failureMode{podDeleted, processKilled}

func fail(t testing.TB, ns, pod string, mode failureMode) {
	t.Helper()
	var err error
	switch mode {
	case podDeleted:
		err = k8sClient.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}})
	case processKilled:
		err = local.Runtime.KillContainer(ns, pod, "valkey")
	}
	if err != nil {
		t.Fatalf("%s %s: %v", mode, pod, err)
	}
}

// podPhase describes a pod for a failure message: its phase, or that it is
// being deleted or gone.
func podPhase(ns, name string) string {
	var p corev1.Pod
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		return fmt.Sprintf("pod %s: %v", name, err)
	}
	if p.DeletionTimestamp != nil {
		return fmt.Sprintf("pod %s %s, deleting since %s", name, p.Status.Phase, p.DeletionTimestamp.Format(time.RFC3339))
	}
	return fmt.Sprintf("pod %s %s", name, p.Status.Phase)
}

// waitReplaced waits until the lost node has left the cluster's members
// and the cluster is Active again with exactly the asked-for shape.
func waitReplaced(t testing.TB, key client.ObjectKey, lost string, shards, replicas int) *valkeyv1.ValkeyCluster {
	t.Helper()
	eventually(t, 5*time.Minute, lost+" replaced", func() error {
		vc := getCluster(t, key)
		if slices.Contains(vc.Status.Nodes, lost) {
			return fmt.Errorf("%s still a member; state %s, conditions %v", lost, vc.Status.State, conditionSummary(vc))
		}
		return nil
	})
	return waitConverged(t, key, shards, replicas, 5*time.Minute)
}

// Losing a replica costs nothing: it is forgotten and replaced in its shard.
func TestFailureReplicaLost(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "fail-replica", "cache", 2, 1)
	runFailures(t, key, 2, 1, func(vc *valkeyv1.ValkeyCluster) string { return vc.Status.ShardStatuses[0].Replicas[0] })
}

// A primary with a replica, quorum held (3 shards): Valkey fails over by
// itself, the operator cleans up and restores the replica count.
func TestFailurePrimaryLostQuorumHeld(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "fail-quorum", "cache", 3, 1)
	runFailures(t, key, 3, 1, func(vc *valkeyv1.ValkeyCluster) string { return vc.Status.ShardStatuses[0].Primary })
}

// A primary with a replica when quorum is lost (1 of 2 primaries left):
// no election can succeed, so the operator forces a takeover.
func TestFailurePrimaryLostNoQuorum(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "fail-noquorum", "cache", 2, 1)
	runFailures(t, key, 2, 1, func(vc *valkeyv1.ValkeyCluster) string { return vc.Status.ShardStatuses[0].Primary })
	assertEvent(t, key, "Failover", topology.ReasonTakeover)
}

// A single shard's primary lost (1x1): its pod deleted, the primary role
// is handed over during the pod's preStop hold; its process SIGKILLed, no
// other primary is left to vote, so the operator has the replica take
// over at once.
func TestFailurePrimaryLostSingleShard(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "fail-single", "cache", 1, 1)
	runFailures(t, key, 1, 1, func(vc *valkeyv1.ValkeyCluster) string { return vc.Status.ShardStatuses[0].Primary })
	if n := countEvents(t, key, "Failover", topology.ReasonTakeover); n != 1 {
		t.Fatalf("%d takeovers, want 1: the killed primary's, with no other primary to vote", n)
	}
}

// runFailures loses the member victim picks, once per failure mode, under
// client load, and demands every acknowledged write back.
func runFailures(t testing.TB, key client.ObjectKey, shards, replicas int, victim func(*valkeyv1.ValkeyCluster) string) {
	t.Helper()
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)
	for i, mode := range failureModes {
		vc := getCluster(t, key)
		lost := victim(vc)
		load := startLoad(c, "load-"+strconv.Itoa(i))
		start := time.Now()
		fail(t, key.Namespace, lost, mode)
		degraded := map[string]string{"namespace": key.Namespace, "cluster": key.Name, "condition": "Degraded"}
		eventually(t, time.Minute, "valkey_cluster_condition{condition=Degraded} 1", func() error {
			if v, _ := metricValue("valkey_cluster_condition", degraded); v != 1 {
				vc := getCluster(t, key)
				return fmt.Errorf("Degraded gauge %v; %s; state %s, nodes %v, conditions %v",
					v, podPhase(key.Namespace, lost), vc.Status.State, vc.Status.Nodes, conditionSummary(vc))
			}
			return nil
		})
		vc = waitReplaced(t, key, lost, shards, replicas)
		t.Logf("%s (%s): Active with %d nodes after %s", lost, mode, len(vc.Status.Nodes), time.Since(start).Round(time.Second))
		if v, _ := metricValue("valkey_cluster_condition", degraded); v != 0 {
			t.Fatalf("Degraded gauge %v once repaired", v)
		}
		acked := load.finish(t)
		checkAll(t, c, before)
		checkAckedAroundKill(t, c, load, acked, start)
	}
}

// checkAckedAroundKill checks the acknowledged writes of a load that ran
// through a primary's kill at killed. Replication is asynchronous: writes
// a dying primary acknowledged but had not yet sent to its replica are the
// documented loss. Every write acknowledged outside the moments around
// the kill must survive; those inside are counted.
func checkAckedAroundKill(t testing.TB, c valkey.Client, load *clientLoad, acked map[string]string, killed time.Time) {
	t.Helper()
	window, rest := load.splitByAckTime(acked, killed.Add(-time.Second), killed.Add(2*time.Second))
	checkAll(t, c, rest)
	t.Logf("writes acknowledged around the kill and lost: %d of %d", countLost(c, window), len(window))
}

// A primary without a replica: its shard's keys are gone (the documented
// data loss), a fresh empty primary takes its slots and the cluster
// returns to Active with every slot served; no other shard loses a key.
func TestFailurePrimaryLostNoReplica(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "fail-noreplica", "cache", 3, 0)
	c := clusterClient(t, seedOf(key), nil)
	for i, mode := range failureModes {
		data := writeKeys(t, c, "data-"+strconv.Itoa(i), 2000)
		vc := getCluster(t, key)
		lost := vc.Status.ShardStatuses[0].Primary
		me := podMyself(t, key.Namespace, lost)
		slotOf := keySlots(t, c, data)
		gone, kept := map[string]string{}, map[string]string{}
		for k, v := range data {
			if slices.ContainsFunc(me.Slots, func(r vk.SlotRange) bool { return r.Contains(slotOf[k]) }) {
				gone[k] = v
			} else {
				kept[k] = v
			}
		}
		if len(gone) == 0 || len(kept) == 0 {
			t.Fatalf("%d keys on the lost shard, %d elsewhere: want some of each", len(gone), len(kept))
		}

		load := startLoad(c, "load-"+strconv.Itoa(i))
		start := time.Now()
		fail(t, key.Namespace, lost, mode)
		vc = waitReplaced(t, key, lost, 3, 0)
		t.Logf("%s (%s): Active with %d nodes after %s; %d keys lost with it", lost, mode, len(vc.Status.Nodes), time.Since(start).Round(time.Second), len(gone))
		acked := load.finish(t)
		checkAll(t, c, kept)
		ackedSlots := keySlots(t, c, acked)
		lostAcked := 0
		for k := range acked {
			if slices.ContainsFunc(me.Slots, func(r vk.SlotRange) bool { return r.Contains(ackedSlots[k]) }) {
				delete(acked, k)
				lostAcked++
			}
		}
		t.Logf("%d acknowledged client writes were on the lost shard's slots and are not checked", lostAcked)
		assertDataLossReported(t, key, lost, me.Slots)
		checkAll(t, c, acked)
		for k := range gone {
			if err := c.Do(context.Background(), c.B().Get().Key(k).Build()).Error(); !valkey.IsValkeyNil(err) {
				t.Fatalf("GET %s of the lost shard: %v, want no such key", k, err)
			}
		}
	}
}

// assertDataLossReported checks that recreating a shard empty is reported
// as a loss, naming the node and its slots: a Warning Event and the
// DataLost condition, and no Normal Event that would read as routine.
func assertDataLossReported(t testing.TB, key client.ObjectKey, lost string, slots []vk.SlotRange) {
	t.Helper()
	assertDataLossEvent(t, key, lost, slots)
	assertDataLostCondition(t, key, lost, slots)
}

// slotsNote is how the operator names a shard's slot ranges in the loss's
// Event and condition: "slots 0-5460,10923-12000".
func slotsNote(slots []vk.SlotRange) string {
	ranges := make([]string, len(slots))
	for i, r := range slots {
		ranges[i] = fmt.Sprintf("%d-%d", r.Start, r.End)
	}
	return "slots " + strings.Join(ranges, ",")
}

// assertDataLossEvent checks for the Warning Event of the loss of lost and
// its slots, and that no Normal Event reported it as routine.
func assertDataLossEvent(t testing.TB, key client.ObjectKey, lost string, slots []vk.SlotRange) {
	t.Helper()
	want := slotsNote(slots)
	eventually(t, 30*time.Second, "a Warning Event of the loss of "+lost, func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name != key.Name || !strings.Contains(e.Note, lost) {
				continue
			}
			if e.Type == corev1.EventTypeNormal && strings.Contains(e.Note, "primary lost") {
				t.Fatalf("the loss of %s was reported as a Normal Event %s: %s", lost, e.Reason, e.Note)
			}
			if e.Type == corev1.EventTypeWarning && e.Reason == "PrimaryLostNoReplica" && strings.Contains(e.Note, want) {
				return nil
			}
		}
		return fmt.Errorf("no Warning PrimaryLostNoReplica naming %s and %s", lost, want)
	})
}

// assertDataLostCondition checks that the DataLost condition names the
// loss of lost and its slots. The Event is sent during the wave, the
// condition written after it.
func assertDataLostCondition(t testing.TB, key client.ObjectKey, lost string, slots []vk.SlotRange) {
	t.Helper()
	want := slotsNote(slots)
	eventually(t, 30*time.Second, "DataLost naming "+lost, func() error {
		vc := getCluster(t, key)
		for _, c := range vc.Status.Conditions {
			if c.Type == "DataLost" {
				if c.Status != metav1.ConditionTrue || c.Reason != "PrimaryLostNoReplica" || !strings.Contains(c.Message, lost) || !strings.Contains(c.Message, want) {
					return fmt.Errorf("DataLost = %s %s %q, want True PrimaryLostNoReplica naming %s and %s", c.Status, c.Reason, c.Message, lost, want)
				}
				return nil
			}
		}
		return fmt.Errorf("no DataLost condition; conditions %v", conditionSummary(vc))
	})
}

// keySlots asks the cluster which slot each key hashes to.
func keySlots(t testing.TB, c valkey.Client, kv map[string]string) map[string]int {
	t.Helper()
	out := make(map[string]int, len(kv))
	for k := range kv {
		slot, err := c.Do(context.Background(), c.B().ClusterKeyslot().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", k, err)
		}
		out[k] = int(slot)
	}
	return out
}

// assertEvent checks that the cluster has an Event with reason whose note
// contains note.
func assertEvent(t testing.TB, key client.ObjectKey, reason, note string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("Event %s %q", reason, note), func() error {
		if n := countEvents(t, key, reason, note); n == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
}

// countEvents counts the cluster's Events with reason whose note contains
// note, repeats of a series included.
func countEvents(t testing.TB, key client.ObjectKey, reason, note string) int {
	t.Helper()
	var list eventsv1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Kind != "ValkeyCluster" || e.Regarding.Name != key.Name || e.Reason != reason || !strings.Contains(e.Note, note) {
			continue
		}
		if e.Series != nil {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n
}
