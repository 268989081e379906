package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/localkube"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// A primary's valkey-server of a persistent 3x1 cluster is SIGKILLed under
// the checking client's load, and the kubelet restarts it in place after a
// delay chosen through the local runtime's restart-delay annotation:
//
//   - at once, well within the cluster's node timeout: its peers never
//     flag it failing, so the shard has no failover at all, and the node
//     comes back as the shard's primary with its node ID and every write
//     it acknowledged (appendfsync always);
//   - after 20 s, longer than the node timeout plus an election: its
//     replica takes over, once and only once, and the old primary comes
//     back with its node ID as a replica of the new one and
//     resynchronises.
//     Only writes acknowledged in the moment of the kill may be lost
//     (asynchronous replication, the documented loss).
//
// Either way no node is replaced or forgotten, no loss is reported, the
// cluster converges to 3x1, and every key written before the kill reads
// back.
func TestPersistencePrimaryCrashRestartsInPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ns  string
		delay     time.Duration
		failovers int
	}{
		{"fast", "persist-crash-fast", 0, 0},
		{"slow", "persist-crash-slow", 20 * time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			crashRestart(t, newDurableCluster(t, tc.ns, 3, 1), tc.delay, tc.failovers)
		})
	}
}

// crashRestart kills the valkey-server of shard 0's primary, restarted
// after delay, and demands that the shard fail over exactly failovers
// times (0 or 1).
func crashRestart(t *testing.T, key client.ObjectKey, delay time.Duration, failovers int) {
	ns := key.Namespace
	ctx := context.Background()
	vc := getCluster(t, key)
	members := sorted(vc.Status.Nodes)
	shard := vc.Status.ShardStatuses[0]
	node, replica := shard.Primary, shard.Replicas[0]
	me := podMyself(t, ns, node)
	id, replicaID := me.ID, podMyself(t, ns, replica).ID
	nodeUIDs := map[string]string{}
	for _, name := range members {
		var vn valkeyv1.ValkeyNode
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vn); err != nil {
			t.Fatal(err)
		}
		nodeUIDs[name] = string(vn.UID)
	}

	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 500)
	waitReplicated(t, c)

	var pod corev1.Pod
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &pod); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[localkube.RestartDelayAnnotation] = delay.String()
	if err := k8sClient.Patch(ctx, &pod, patch); err != nil {
		t.Fatalf("annotating %s with its restart delay: %v", node, err)
	}

	var observers []string
	for _, name := range members {
		if name != node && name != replica {
			observers = append(observers, name)
		}
	}
	owners := watchSlotOwner(t, ns, observers, me.Slots[0].Start)
	events := countEvents(t, key, "Failover", "")

	load := startLoad(c, "crash")
	eventually(t, 30*time.Second, "writes acknowledged before the kill", func() error {
		if n := load.writes.Load(); n < 200 {
			return fmt.Errorf("%d writes so far", n)
		}
		return nil
	})
	fail(t, ns, node, processKilled)
	killed := time.Now()
	eventually(t, 2*time.Minute, node+" restarted in place", func() error {
		var p corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &p); err != nil {
			return err
		}
		if p.UID != pod.UID {
			return fmt.Errorf("the pod was replaced; a crash should restart the process in place")
		}
		if restarts(&p) == 0 {
			return fmt.Errorf("container not restarted yet")
		}
		return nil
	})
	vc = waitConverged(t, key, 3, 1, 5*time.Minute)
	t.Logf("restart delay %s: converged %s after the kill", delay, time.Since(killed).Round(100*time.Millisecond))
	eventually(t, 30*time.Second, "writes acknowledged after the node came back", func() error {
		if n := load.writes.Load(); n < 600 {
			return fmt.Errorf("%d writes so far", n)
		}
		return nil
	})
	acked := load.finish(t)
	seen := owners.stop()

	checkAll(t, c, before)
	if failovers == 0 {
		checkAll(t, c, acked)
		if load.stale.Load() > 0 {
			t.Errorf("%d reads returned another value than the one last acknowledged: %v", load.stale.Load(), load.errs)
		}
	} else {
		checkAckedAroundKill(t, c, load, acked, killed)
	}
	assertNoDataLoss(t, key)

	for observer, ids := range seen {
		t.Logf("%s saw slot %d owned by %v", observer, me.Slots[0].Start, ids)
		if n := len(ids) - 1; n > failovers {
			t.Errorf("%s saw the shard's primary change %d times (%v), want at most %d", observer, n, ids, failovers)
		}
	}
	n := countEvents(t, key, "Failover", "") - events
	t.Logf("%d Failover Events", n)
	if n > failovers {
		t.Errorf("%d Failover Events, want at most %d", n, failovers)
	}
	if got := sorted(vc.Status.Nodes); !slices.Equal(got, members) {
		t.Errorf("members %v, were %v: a node was replaced", got, members)
	}
	for _, name := range members {
		var vn valkeyv1.ValkeyNode
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vn); err != nil || string(vn.UID) != nodeUIDs[name] {
			t.Errorf("ValkeyNode %s deleted or recreated (err %v)", name, err)
		}
	}

	after := podMyself(t, ns, node)
	if after.ID != id {
		t.Fatalf("%s has node ID %s after its restart, was %s", node, after.ID, id)
	}
	primary, follower := node, replica
	if after.IsReplica() {
		if after.PrimaryID != replicaID {
			t.Fatalf("%s is a replica of %s, want its old replica %s (%s)", node, after.PrimaryID, replica, replicaID)
		}
		primary, follower = replica, node
	}
	switch {
	case failovers == 0 && primary != node:
		t.Errorf("%s is a replica of %s after a restart its peers should not have noticed", node, replica)
	case failovers == 1 && primary == node:
		t.Errorf("%s is still the primary after a restart %s after its crash: its replica was never elected", node, delay)
	}
	t.Logf("shard primary %s, replica %s", primary, follower)
	eventually(t, time.Minute, follower+" resynchronised from "+primary, func() error {
		return inSync(ns, primary, follower)
	})
}

// inSync says what keeps follower from holding exactly what primary
// holds: a link down, an offset behind or another number of keys.
func inSync(ns, primary, follower string) error {
	ctx := context.Background()
	state := func(name string) (vk.ReplicationInfo, string, error) {
		n, err := dialPod(ns, name)
		if err != nil {
			return vk.ReplicationInfo{}, "", err
		}
		defer n.Close()
		repl, err := n.InfoReplication(ctx)
		if err != nil {
			return repl, "", err
		}
		info, err := n.Info(ctx, "keyspace")
		if err != nil {
			return repl, "", err
		}
		keys, _, _ := strings.Cut(info["keyspace"]["db0"], ",")
		return repl, keys, nil
	}
	p, pKeys, err := state(primary)
	if err != nil {
		return err
	}
	f, fKeys, err := state(follower)
	if err != nil {
		return err
	}
	if f.Role != vk.RoleReplica || f.PrimaryLinkStatus != "up" || f.ReplicationOffset != p.ReplicationOffset || fKeys != pKeys {
		return fmt.Errorf("%s: role %s, link %q, offset %d, %s; %s: offset %d, %s",
			follower, f.Role, f.PrimaryLinkStatus, f.ReplicationOffset, fKeys, primary, p.ReplicationOffset, pKeys)
	}
	return nil
}

// slotOwners polls observers' CLUSTER NODES for the node that serves one
// slot, keeping for each observer the node IDs it named, in order, each
// change once. Observers outside the shard see its failovers as the
// cluster does: a restarted primary that briefly claims its old slots
// under an older epoch does not move them in their view.
type slotOwners struct {
	mu   sync.Mutex
	seen map[string][]string
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

func watchSlotOwner(t testing.TB, ns string, observers []string, slot int) *slotOwners {
	w := &slotOwners{seen: map[string][]string{}, done: make(chan struct{})}
	t.Cleanup(func() { w.stop() })
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, o := range observers {
				if id := slotOwner(ns, o, slot); id != "" {
					w.mu.Lock()
					if ids := w.seen[o]; len(ids) == 0 || ids[len(ids)-1] != id {
						w.seen[o] = append(ids, id)
					}
					w.mu.Unlock()
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

// slotOwner is the primary observer names for slot, "" when it does not
// answer or names none.
func slotOwner(ns, observer string, slot int) string {
	n, err := dialPod(ns, observer)
	if err != nil {
		return ""
	}
	defer n.Close()
	nodes, err := n.ClusterNodes(context.Background())
	if err != nil {
		return ""
	}
	for _, p := range nodes {
		if !p.IsPrimary() {
			continue
		}
		for _, r := range p.Slots {
			if r.Start <= slot && slot <= r.End {
				return p.ID
			}
		}
	}
	return ""
}

// stop ends the polling and returns what each observer saw.
func (w *slotOwners) stop() map[string][]string {
	w.once.Do(func() { close(w.done) })
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][]string{}
	for o, ids := range w.seen {
		out[o] = slices.Clone(ids)
	}
	return out
}
