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

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
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
// A persistent 1x2 cluster, one member per zone, has a member on the same
// node: its evicted pod's process runs on with its volume, so no second
// pod may start on that volume while it does (the ValkeyNode keeps its one
// terminating pod), and once the node is back the member comes back on its
// volume as itself, with every acknowledged write.
// Not parallel: it silences a Kubernetes node the other tests' pods run on.
func TestChaosNodeHeartbeatLost(t *testing.T) {
	ctx := context.Background()
	key := newPlainCluster(t, "chaos-heartbeat", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)

	dkey := newDurableCluster(t, "chaos-heartbeat-durable", 1, 2, withSpec(func(s *valkeyv1.ValkeyClusterSpec) {
		s.Placement = &valkeyv1.Placement{ZoneSpread: valkeyv1.ZoneSpreadRequired}
	}))
	dc := clusterClient(t, seedOf(dkey), nil)
	dbefore := writeKeys(t, dc, "durable-before", 1000)
	waitReplicated(t, dc)

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
	var durable *corev1.Pod
	for _, p := range clusterPods(t, dkey) {
		if p.Spec.NodeName == silent {
			durable = p
		}
	}
	if durable == nil {
		t.Fatalf("no member of the persistent cluster on %s, although its 3 members must be one per zone", silent)
	}
	durableID := podMyself(t, dkey.Namespace, durable.Name).ID
	t.Logf("silencing %s, which runs %v (primary of shard 0: %s) and the persistent %s", silent, onNode, vc.Status.ShardStatuses[0].Primary, durable.Name)
	for _, p := range append([]*corev1.Pod{durable}, podsNamed(pods, onNode)...) {
		orig := p.DeepCopy()
		shortened := false
		for i, tol := range p.Spec.Tolerations {
			if tol.Key == corev1.TaintNodeUnreachable && tol.Effect == corev1.TaintEffectNoExecute {
				p.Spec.Tolerations[i].TolerationSeconds = ptr.To[int64](unreachableToleration)
				shortened = true
			}
		}
		if !shortened {
			t.Fatalf("pod %s has no toleration of %s to shorten: %v", p.Name, corev1.TaintNodeUnreachable, p.Spec.Tolerations)
		}
		if err := k8sClient.Patch(ctx, p, client.MergeFrom(orig)); err != nil {
			t.Fatalf("shortening the toleration of pod %s: %v", p.Name, err)
		}
	}
	dload := startLoad(dc, "durable-heartbeat")

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
		if p := getPod(t, dkey.Namespace, durable.Name); p.DeletionTimestamp == nil {
			return fmt.Errorf("persistent pod %s not evicted yet", durable.Name)
		}
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
	// Its volume is in use by a process that runs on: the node has its one
	// pod, terminating, and no other pod may start on that volume.
	if p := getPod(t, dkey.Namespace, durable.Name); p.UID != durable.UID {
		t.Fatalf("persistent node %s got a new pod %s while its evicted one's process still ran on its volume", durable.Name, p.UID)
	}
	if n, err := dialPod(dkey.Namespace, durable.Name); err != nil {
		t.Fatalf("evicted persistent pod %s: %v", durable.Name, err)
	} else {
		err = n.Ping(ctx)
		n.Close()
		if err != nil {
			t.Fatalf("evicted persistent pod %s no longer answers: %v", durable.Name, err)
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

	eventually(t, 3*time.Minute, durable.Name+" back on its volume", func() error {
		p := getPod(t, dkey.Namespace, durable.Name)
		if p.UID == durable.UID || p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("%s", podPhase(dkey.Namespace, durable.Name))
		}
		return nil
	})
	dvc := waitConverged(t, dkey, 1, 2, 5*time.Minute)
	if !slices.Contains(dvc.Status.Nodes, durable.Name) {
		t.Errorf("persistent node %s was replaced: members %v", durable.Name, dvc.Status.Nodes)
	}
	if id := podMyself(t, dkey.Namespace, durable.Name).ID; id != durableID {
		t.Errorf("%s came back as %s, was %s", durable.Name, id, durableID)
	}
	dacked := dload.finish(t)
	checkAll(t, dc, dbefore)
	checkAll(t, dc, dacked)
	for _, p := range clusterPods(t, key) {
		if !slices.Contains(vc.Status.Nodes, p.Name) {
			t.Errorf("pod %s is not a member of the converged cluster", p.Name)
		}
	}
}

func podsNamed(pods map[string]*corev1.Pod, names []string) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(names))
	for _, n := range names {
		out = append(out, pods[n])
	}
	return out
}
