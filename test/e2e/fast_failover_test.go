package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// A primary's process SIGKILLed under load on a 3x1 cluster: the kubelet
// reports its container ended, and the operator promotes the replica at
// once with CLUSTER FAILOVER FORCE (the other two primaries vote) instead
// of waiting for Valkey's cluster-node-timeout and election delay. The
// Event names the path taken; the heir serves the shard; every key written
// before and every write acknowledged outside the moments around the kill
// is read back. The longest write gap is logged (make bench compares it
// with Valkey's own failover on plain processes).
func TestFastFailoverOnProcessExit(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "fast-failover", "cache", 3, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 1000)
	waitReplicated(t, c)

	vc := getCluster(t, key)
	lost, heir := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[0].Replicas[0]
	load := startProbeLoad(t, c, "load")
	start := time.Now()
	fail(t, key.Namespace, lost, processKilled)
	assertEvent(t, key, string(topology.KindFailover), topology.ReasonProcessExited)
	logFailoverTimeline(t, key, lost, start)
	vc = waitReplaced(t, key, lost, 3, 1)
	t.Logf("%s killed: Active with %d nodes after %s", lost, len(vc.Status.Nodes), time.Since(start).Round(time.Second))

	if got := vc.Status.ShardStatuses[0].Primary; got != heir {
		t.Fatalf("shard 0's primary is %s, want its replica %s", got, heir)
	}
	if n := countEvents(t, key, string(topology.KindFailover), topology.ReasonElectionOverdue); n > 0 {
		t.Fatalf("%d overdue-election takeovers: the forced failover was not elected", n)
	}
	assertNoDataLoss(t, key)
	if n := countEvents(t, key, valkeyv1.ReasonPrimaryLostNoReplica, ""); n > 0 {
		t.Fatalf("%d data-loss Events for a shard whose replica held the data", n)
	}
	acked := load.clientLoad.finish(t)
	for _, g := range summarizeLoad(load.samples, load.writers, load.start, time.Now(), start).Shards {
		t.Logf("shard %d: longest write gap %.0f ms, from %.2f s after the kill", g.Shard, g.LongestGapMs, g.AtSeconds)
	}
	checkAll(t, c, before)
	checkAckedAroundKill(t, c, load.clientLoad, acked, start)
}

// logFailoverTimeline logs where the time from the kill to the forced
// failover went: the process's end as the kubelet recorded it, and the
// operator's Failover Event.
func logFailoverTimeline(t *testing.T, key client.ObjectKey, lost string, killed time.Time) {
	t.Helper()
	var exited time.Time
	// The operator may have replaced the pod already: then the kubelet's
	// record of the exit is gone with it, and only the Event is logged.
	var pod corev1.Pod
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: key.Namespace, Name: lost}, &pod)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == render.ContainerValkey && cs.State.Terminated != nil {
			exited = cs.State.Terminated.FinishedAt.Time
		}
	}
	var list eventsv1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Name == key.Name && e.Reason == string(topology.KindFailover) && strings.Contains(e.Note, topology.ReasonProcessExited) {
			t.Logf("kill at %s; the kubelet saw the process end %s later; FAILOVER FORCE recorded %s after the kill",
				killed.Format("15:04:05.000"), exited.Sub(killed).Round(time.Millisecond), e.EventTime.Sub(killed).Round(time.Millisecond))
		}
	}
}
