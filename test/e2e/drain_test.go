package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// primaryGapLimit is the longest a shard may be seen without a slot-holding
// primary while its node is drained, as the operator reports it in status.
// An evicted primary hands its role over while its pod's preStop hold
// keeps it serving, so the true gap is well under a second; the bound is
// generous because status follows the cluster a reconcile behind.
const primaryGapLimit = 30 * time.Second

// A Kubernetes node running a primary can be drained the way kubectl drain
// does it: cordon, then evict every Valkey pod on it through the eviction
// API, retrying while a budget refuses (429). Each shard's budget lets one
// of its pods go at a time; the operator replaces it on another node; the
// drain finishes with the cluster whole and off the node, every key written
// before and every write acknowledged outside the moments of the evictions
// readable.
// Once on Valkey 8.0.1 and once on 9.1.2, one after the other.
// Not parallel: it drains a Kubernetes node the other tests' pods run on.
func TestDrainNodeWithPrimaries(t *testing.T) {
	for _, version := range []string{"8.0.1", "9.1.2"} {
		t.Run(version, func(t *testing.T) { drainNodeWithPrimaries(t, version) })
	}
}

func drainNodeWithPrimaries(t *testing.T, version string) {
	ctx := context.Background()
	ns := "drain-" + strings.ReplaceAll(version, ".", "")
	createNamespace(t, ns)
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: createACLMenu(t, ns, version), Shards: 2, ReplicasPerShard: 1}}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	key := client.ObjectKeyFromObject(vc)
	waitConverged(t, key, 2, 1, 5*time.Minute)

	var nodes corev1.NodeList
	if err := k8sClient.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) < 2 {
		t.Fatalf("%d Kubernetes nodes: a drain needs another node to move to", len(nodes.Items))
	}
	// The node to drain runs a primary; of those, the one running the most
	// pods of the cluster, so the drain has the most to do. Where one node
	// runs a pod of each shard, each of those pods is made its shard's
	// primary first: the drain then hands over both primaries of the
	// cluster at once, whose elections compete for the same votes.
	drained, perNode, pods := primariesTogether(t, key)
	t.Logf("pods per node %v; draining %s (%d Kubernetes nodes)", perNode, drained, len(nodes.Items))

	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)

	setUnschedulable(t, drained, true)
	t.Cleanup(func() { setUnschedulable(t, drained, false) })

	watch := watchShards(t, key, 2)
	load := startLoad(c, "drain")
	evictedAt := map[string]time.Time{}
	refused := 0
	eventually(t, 4*time.Minute, "every Valkey pod evicted from "+drained, func() error {
		var left []string
		for _, p := range clusterPods(t, key) {
			if p.Spec.NodeName != drained {
				continue
			}
			left = append(left, p.Name)
			if !p.DeletionTimestamp.IsZero() {
				continue // evicted, still terminating
			}
			err := k8sClient.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			})
			switch {
			case err == nil:
				evictedAt[p.Name] = time.Now()
				t.Logf("evicted %s after %d refusals", p.Name, refused)
				assertShardHeld(t, key, p)
			case apierrors.IsTooManyRequests(err):
				// The budget holds it until its shard is whole again;
				// kubectl drain retries the same way.
				refused++
			case apierrors.IsNotFound(err):
			default:
				return fmt.Errorf("evicting %s: %w", p.Name, err)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d Valkey pods still on %s: %v; %d evictions refused", len(left), drained, left, refused)
		}
		return nil
	})
	t.Logf("drain of %s done: %d pods evicted, %d evictions refused by the budgets", drained, len(evictedAt), refused)
	for _, name := range perNode[drained] {
		if _, ok := evictedAt[name]; !ok {
			t.Errorf("pod %s left %s without being evicted", name, drained)
		}
	}

	for name := range evictedAt {
		vc = waitReplaced(t, key, name, 2, 1)
	}
	watch.stop()
	for _, sh := range vc.Status.ShardStatuses {
		if sh.Primary == "" || sh.SlotCount == 0 {
			t.Errorf("after the drain shard %d has primary %q with %d slots", sh.Index, sh.Primary, sh.SlotCount)
		}
	}
	for idx, gap := range watch.longest {
		if gap > primaryGapLimit {
			t.Errorf("shard %d was seen without a slot-holding primary for %s (limit %s)", idx, gap.Round(100*time.Millisecond), primaryGapLimit)
		}
	}
	t.Logf("longest time seen without a slot-holding primary, per shard: %v", watch.longest)
	for _, p := range clusterPods(t, key) {
		switch {
		case p.Spec.NodeName == drained:
			t.Errorf("pod %s runs on the cordoned node %s", p.Name, drained)
		case !slices.Contains(vc.Status.Nodes, p.Name):
			t.Errorf("pod %s is not a member of the cluster", p.Name)
		case pods[p.Name] == nil:
			t.Logf("replacement %s runs on %s", p.Name, p.Spec.NodeName)
		}
	}

	acked := load.finishUndisturbed(t)
	checkAll(t, c, before)
	// An evicted primary hands its role to its synced replica before it
	// stops (the operator's CLUSTER FAILOVER waits for the replica to catch
	// up), so every acknowledged write survives the drain.
	checkAll(t, c, acked)
}

// assertShardHeld checks, right after evicted's eviction, that its shard's
// budget lets no other pod of the shard go (a dry-run eviction of each is
// refused) until the operator has replaced it.
func assertShardHeld(t testing.TB, key client.ObjectKey, evicted *corev1.Pod) {
	t.Helper()
	shard := evicted.Labels[valkeyv1.LabelShardIndex]
	for _, p := range clusterPods(t, key) {
		if p.Name == evicted.Name || p.Labels[valkeyv1.LabelShardIndex] != shard || !p.DeletionTimestamp.IsZero() {
			continue
		}
		err := k8sClient.SubResource("eviction").Create(context.Background(), p, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		}, client.DryRunAll)
		if !apierrors.IsTooManyRequests(err) {
			t.Errorf("shard %s: with %s just evicted, a dry-run eviction of %s: %v; want refused (429)", shard, evicted.Name, p.Name, err)
			continue
		}
		t.Logf("shard %s: %s held by the budget while %s is replaced", shard, p.Name, evicted.Name)
	}
}

// clusterPods are the cluster's pods by name.
func clusterPods(t testing.TB, key client.ObjectKey) map[string]*corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace), client.MatchingLabels(render.ClusterSelector(key.Name))); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// setUnschedulable cordons (on) or uncordons a Kubernetes node.
func setUnschedulable(t testing.TB, name string, on bool) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("node %s unschedulable=%v", name, on), func() error {
		var n corev1.Node
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
			return err
		}
		n.Spec.Unschedulable = on
		return k8sClient.Update(context.Background(), &n)
	})
}

// shardWatch polls the cluster's status.shardStatuses, logs every change
// and keeps, per shard index, the longest time it was seen without a
// slot-holding primary.
type shardWatch struct {
	longest map[int32]time.Duration
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func watchShards(t testing.TB, key client.ObjectKey, shards int32) *shardWatch {
	w := &shardWatch{longest: map[int32]time.Duration{}, done: make(chan struct{})}
	// A test that fails early still stops the polling before it ends.
	t.Cleanup(w.stop)
	start := time.Now()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		without := map[int32]time.Time{}
		last := ""
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			var vc valkeyv1.ValkeyCluster
			if err := k8sClient.Get(context.Background(), key, &vc); err == nil {
				now := time.Now()
				served := map[int32]bool{}
				var desc []string
				for _, sh := range vc.Status.ShardStatuses {
					served[sh.Index] = sh.Primary != "" && sh.SlotCount > 0
					desc = append(desc, fmt.Sprintf("%d: primary %q %d slots, replicas %v", sh.Index, sh.Primary, sh.SlotCount, sh.Replicas))
				}
				if s := strings.Join(desc, "; "); s != last {
					t.Logf("+%s shards %s (%s)", now.Sub(start).Round(100*time.Millisecond), s, vc.Status.State)
					last = s
				}
				for idx := range shards {
					since, gap := without[idx]
					switch {
					case !served[idx] && !gap:
						without[idx] = now
					case served[idx] && gap:
						delete(without, idx)
					}
					if gap {
						w.longest[idx] = max(w.longest[idx], now.Sub(since))
					}
				}
			}
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the polling; longest is final afterwards.
func (w *shardWatch) stop() {
	w.once.Do(func() { close(w.done) })
	w.wg.Wait()
}

// primariesTogether picks the Kubernetes node to drain and returns it with
// the cluster's pods per node and by name. A node running a pod of every shard gets
// all the primaries (a CLUSTER FAILOVER on each of its replicas); else it
// is the node of a primary running the most pods.
func primariesTogether(t testing.TB, key client.ObjectKey) (string, map[string][]string, map[string]*corev1.Pod) {
	t.Helper()
	vc := getCluster(t, key)
	pods := clusterPods(t, key)
	perNode := map[string][]string{}
	shardsOn := map[string]map[int32]string{}
	for _, sh := range vc.Status.ShardStatuses {
		for _, name := range append([]string{sh.Primary}, sh.Replicas...) {
			p, ok := pods[name]
			if !ok {
				t.Fatalf("node %s of shard %d has no pod", name, sh.Index)
			}
			perNode[p.Spec.NodeName] = append(perNode[p.Spec.NodeName], name)
			if shardsOn[p.Spec.NodeName] == nil {
				shardsOn[p.Spec.NodeName] = map[int32]string{}
			}
			shardsOn[p.Spec.NodeName][sh.Index] = name
		}
	}
	var drained string
	for _, sh := range vc.Status.ShardStatuses {
		p := pods[sh.Primary]
		if drained == "" || len(perNode[p.Spec.NodeName]) > len(perNode[drained]) {
			drained = p.Spec.NodeName
		}
	}
	for node, on := range shardsOn {
		if len(on) == len(vc.Status.ShardStatuses) {
			drained = node
			for _, sh := range vc.Status.ShardStatuses {
				if name := on[sh.Index]; name != sh.Primary {
					promote(t, key, pods[name], sh.Index)
				}
			}
			break
		}
	}
	return drained, perNode, pods
}

// promote makes a replica its shard's primary with a CLUSTER FAILOVER sent
// to it, as a person would, and waits until status reports it.
func promote(t testing.TB, key client.ObjectKey, replica *corev1.Pod, shard int32) {
	t.Helper()
	c, err := nodeClient(net.JoinHostPort(replica.Status.PodIP, "6379"), "", "")
	if err != nil {
		t.Fatalf("connecting to %s: %v", replica.Name, err)
	}
	defer c.Close()
	if err := c.Do(context.Background(), c.B().ClusterFailover().Build()).Error(); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s: %v", replica.Name, err)
	}
	eventually(t, time.Minute, fmt.Sprintf("%s primary of shard %d", replica.Name, shard), func() error {
		for _, sh := range getCluster(t, key).Status.ShardStatuses {
			if sh.Index == shard && sh.Primary != replica.Name {
				return fmt.Errorf("shard %d's primary is %s", shard, sh.Primary)
			}
		}
		return nil
	})
	t.Logf("made %s the primary of shard %d", replica.Name, shard)
}
