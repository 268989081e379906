package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unreachableToleration is how long, in seconds, the silenced pods tolerate
// their node's loss before they are evicted, instead of the 300 s the API
// server gives every pod. The operator never reads a pod's Ready condition,
// so how long the pods are not Ready before the eviction changes nothing it
// does; what it must get right starts with the eviction.
const unreachableToleration = 20

// A Kubernetes node that stops heartbeating while its Valkey processes run
// on: its kubelet is cut off from the API server (PauseNodeHeartbeat), as
// in a network partition. After the node lifecycle controller's grace
// period the node is NotReady and its pods are marked not Ready; after the
// pods' toleration of node.kubernetes.io/unreachable (unreachableToleration)
// they are evicted, and stay terminating with their processes running,
// since no kubelet is there to stop them. The operator must neither forget a
// running process nor hand its slots elsewhere: a primary on the node is
// handed over to an in-sync replica elsewhere (its pod is being deleted),
// and the cluster waits for the processes to exit, reporting it. Once the
// node is heard from again the evicted pods stop and are replaced; every
// write acknowledged before and throughout is readable.
// Not parallel: it silences a Kubernetes node the other tests' pods run on.
func TestChaosNodeHeartbeatLost(t *testing.T) {
	ctx := context.Background()
	key := newPlainCluster(t, "chaos-heartbeat", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)

	vc := getCluster(t, key)
	pods := clusterPods(t, key)
	silent := pods[vc.Status.ShardStatuses[0].Primary].Spec.NodeName
	var onNode []string
	for name, p := range pods {
		if p.Spec.NodeName == silent {
			onNode = append(onNode, name)
		}
	}
	slices.Sort(onNode)
	t.Logf("silencing %s, which runs %v (primary of shard 0: %s)", silent, onNode, vc.Status.ShardStatuses[0].Primary)
	for _, name := range onNode {
		p := pods[name]
		orig := p.DeepCopy()
		shortened := false
		for i, tol := range p.Spec.Tolerations {
			if tol.Key == corev1.TaintNodeUnreachable && tol.Effect == corev1.TaintEffectNoExecute {
				p.Spec.Tolerations[i].TolerationSeconds = ptr.To[int64](unreachableToleration)
				shortened = true
			}
		}
		if !shortened {
			t.Fatalf("pod %s has no toleration of %s to shorten: %v", name, corev1.TaintNodeUnreachable, p.Spec.Tolerations)
		}
		if err := k8sClient.Patch(ctx, p, client.MergeFrom(orig)); err != nil {
			t.Fatalf("shortening the toleration of pod %s: %v", name, err)
		}
	}

	truth := watchTruth(t, key)
	shards := watchShards(t, key, 2)
	load := startLoad(c, "heartbeat")
	if err := local.Runtime.PauseNodeHeartbeat(silent, true); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = local.Runtime.PauseNodeHeartbeat(silent, false)
		}
	})

	eventually(t, 3*time.Minute, silent+" NotReady", func() error {
		var n corev1.Node
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: silent}, &n); err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("still Ready")
	})
	t.Logf("%s NotReady %s after its heartbeat stopped", silent, time.Since(paused).Round(time.Second))

	eventually(t, 2*time.Minute, "the pods on "+silent+" evicted", func() error {
		for _, name := range onNode {
			var p corev1.Pod
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, &p); err != nil {
				return err
			}
			if p.DeletionTimestamp == nil {
				return fmt.Errorf("pod %s not evicted yet; cluster %s, conditions %v", name, getCluster(t, key).Status.State, conditionSummary(getCluster(t, key)))
			}
		}
		return nil
	})
	evicted := time.Now()
	t.Logf("pods on %s evicted %s after its heartbeat stopped", silent, evicted.Sub(paused).Round(time.Second))

	eventually(t, 2*time.Minute, "every shard's primary off "+silent, func() error {
		vc := getCluster(t, key)
		for _, sh := range vc.Status.ShardStatuses {
			if slices.Contains(onNode, sh.Primary) || sh.SlotCount == 0 {
				return fmt.Errorf("shard %d: primary %s with %d slots", sh.Index, sh.Primary, sh.SlotCount)
			}
		}
		return nil
	})
	t.Logf("primaries off %s %s after the eviction", silent, time.Since(evicted).Round(100*time.Millisecond))

	// The evicted pods' processes run on, and the operator waits for them:
	// for a while it must not forget them or claim the cluster whole.
	time.Sleep(30 * time.Second)
	for _, name := range onNode {
		n, err := dialPod(key.Namespace, name)
		if err != nil {
			t.Fatalf("evicted pod %s on the silent node: %v", name, err)
		}
		if err := n.Ping(ctx); err != nil {
			t.Fatalf("evicted pod %s on the silent node no longer answers: %v", name, err)
		}
		n.Close()
		if k := countEvents(t, key, "Forget", name); k > 0 {
			t.Fatalf("the operator forgot %s while its process still ran (%d Forget Events)", name, k)
		}
	}
	vc = getCluster(t, key)
	t.Logf("while the evicted pods run on: state %s, conditions %v", vc.Status.State, conditionSummary(vc))

	if err := local.Runtime.PauseNodeHeartbeat(silent, false); err != nil {
		t.Fatal(err)
	}
	resumed = true
	back := time.Now()
	for _, name := range onNode {
		vc = waitReplaced(t, key, name, 2, 1)
	}
	t.Logf("evicted pods replaced and the cluster converged %s after %s was heard from again", time.Since(back).Round(time.Second), silent)
	shards.stop()
	t.Logf("longest time a shard was seen without a slot-holding primary: %v", shards.longest)
	longest, what := truth.stop()
	t.Logf("longest time the status claimed a healthy cluster while it was broken: %s (%s)", longest.Round(100*time.Millisecond), what)
	if longest > 5*time.Second {
		t.Errorf("the status claimed a healthy cluster for %s while it was broken: %s", longest.Round(100*time.Millisecond), what)
	}
	acked := load.finish(t)
	checkAll(t, c, before)
	checkAll(t, c, acked)
	for _, p := range clusterPods(t, key) {
		if !slices.Contains(vc.Status.Nodes, p.Name) {
			t.Errorf("pod %s is not a member of the converged cluster", p.Name)
		}
	}
}
