package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// An election that can never happen is not waited for: a majority of
// primaries is healthy, so Valkey is expected to promote the lost
// primary's replica, but that replica is configured out of elections
// (cluster-replica-no-failover). Without a bound the shard's slots would
// stay unserved, and with full coverage required the whole cluster would
// answer CLUSTERDOWN. Once the replica's own link has been down past the
// election deadline, the operator promotes it: it holds the data.
// The primary's Kubernetes node stops reporting before its process is
// killed: a death the kubelet reports is promoted over at once (FAILOVER
// FORCE, TestFastFailoverOnProcessExit) and leaves no election to wait for.
func TestElectionThatNeverHappensIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "election", "cache", 3, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)

	vc := getCluster(t, key)
	lost, heir := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[0].Replicas[0]
	n, err := dialPod(key.Namespace, heir)
	if err != nil {
		t.Fatal(err)
	}
	err = n.ConfigSet(context.Background(), "cluster-replica-no-failover", "yes")
	n.Close()
	if err != nil {
		t.Fatalf("keeping %s out of elections: %v", heir, err)
	}

	var pod corev1.Pod
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: key.Namespace, Name: lost}, &pod); err != nil {
		t.Fatal(err)
	}
	silent := pod.Spec.NodeName
	if err := local.Runtime.PauseNodeHeartbeat(silent, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.Runtime.PauseNodeHeartbeat(silent, false) })

	load := startLoad(c, "load")
	start := time.Now()
	fail(t, key.Namespace, lost, processKilled)
	eventually(t, topology.ElectionDeadline+time.Minute, "the operator's takeover", func() error {
		if countEvents(t, key, "Failover", topology.ReasonElectionOverdue) == 0 {
			return errorf("no Failover Event %q yet; %s", topology.ReasonElectionOverdue, podPhase(key.Namespace, lost))
		}
		return nil
	})
	if n := countEvents(t, key, "Failover", topology.ReasonProcessExited); n > 0 {
		t.Fatalf("%d forced failovers over a primary whose end the kubelet never reported", n)
	}
	// The kubelet reports again: the dead pod is seen ended and replaced.
	if err := local.Runtime.PauseNodeHeartbeat(silent, false); err != nil {
		t.Fatal(err)
	}
	vc = waitReplaced(t, key, lost, 3, 1)
	if got := vc.Status.ShardStatuses[0].Primary; got != heir {
		t.Fatalf("shard 0's primary is %s, want the replica configured out of elections, %s", got, heir)
	}
	if n := countEvents(t, key, valkeyv1.ReasonPrimaryLostNoReplica, ""); n > 0 {
		t.Fatalf("%d data-loss Events for a shard whose replica held the data", n)
	}
	acked := load.finish(t)
	checkAll(t, c, before)
	checkAckedAroundKill(t, c, load, acked, start)
}
