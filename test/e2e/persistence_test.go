package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// A persistent one-shard cluster without a replica holds the only copy of
// every key on its node's volume. Under the checking client's load with
// appendfsync always, its valkey-server is SIGKILLed and later its pod is
// deleted: each time the node comes back on the same claim with the same
// Valkey node ID, no node is replaced, and every write acknowledged before
// is read back with its last acknowledged value.
func TestPersistenceNodeComesBackWithItsData(t *testing.T) {
	t.Parallel()
	const ns = "persist-restart"
	key := newDurableCluster(t, ns, 1, 0)
	vc := getCluster(t, key)
	node := vc.Status.ShardStatuses[0].Primary
	ctx := context.Background()

	var claim corev1.PersistentVolumeClaim
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.NodeClaimName(node)}, &claim); err != nil {
		t.Fatalf("the node's claim: %v", err)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != localkube.StorageClassName {
		t.Fatalf("claim %s is %s in class %v, want Bound in the default %s", claim.Name, claim.Status.Phase, claim.Spec.StorageClassName, localkube.StorageClassName)
	}
	if len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].Name != node {
		t.Fatalf("claim owners %+v, want the node %s", claim.OwnerReferences, node)
	}
	volume := claim.Spec.VolumeName
	id := podMyself(t, ns, node).ID
	c := clusterClient(t, seedOf(key), nil)

	for _, mode := range []failureMode{processKilled, podDeleted} {
		t.Run(string(mode), func(t *testing.T) {
			load := startLoad(c, "persist-"+string(mode[:3]))
			eventually(t, 30*time.Second, "writes acknowledged before the failure", func() error {
				if n := load.writes.Load(); n < 200 {
					return fmt.Errorf("%d writes so far", n)
				}
				return nil
			})
			var before corev1.Pod
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &before); err != nil {
				t.Fatal(err)
			}
			fail(t, ns, node, mode)
			failed := time.Now()
			eventually(t, 2*time.Minute, node+" back with its pod", func() error {
				var p corev1.Pod
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &p); err != nil {
					return err
				}
				switch {
				case mode == podDeleted && p.UID == before.UID:
					return fmt.Errorf("the deleted pod is still there (%s)", podPhase(ns, node))
				case mode == processKilled && p.UID != before.UID:
					return fmt.Errorf("the pod was replaced; a crash should restart the process in place")
				case mode == processKilled && restarts(&p) == 0:
					return fmt.Errorf("container not restarted yet")
				}
				return nil
			})
			waitConverged(t, key, 1, 0, 3*time.Minute)
			t.Logf("%s: serving again %s after the failure", mode, time.Since(failed).Round(100*time.Millisecond))
			// Writes continue after the node is back, so the check covers
			// what was written across the failure and after it.
			eventually(t, 30*time.Second, "writes acknowledged after the node came back", func() error {
				if n := load.writes.Load(); n < 400 {
					return fmt.Errorf("%d writes so far", n)
				}
				return nil
			})
			acked := load.finish(t)
			checkAll(t, c, acked)
			if load.stale.Load() > 0 {
				t.Errorf("%d reads returned another value than the one last acknowledged: %v", load.stale.Load(), load.errs)
			}

			vc := getCluster(t, key)
			if got := vc.Status.ShardStatuses[0].Primary; got != node {
				t.Errorf("the primary is now %s, want %s back: the node was replaced", got, node)
			}
			if got := podMyself(t, ns, node).ID; got != id {
				t.Errorf("node ID %s after the %s, was %s", got, mode, id)
			}
			var now corev1.PersistentVolumeClaim
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim.Name}, &now); err != nil || now.UID != claim.UID || now.Spec.VolumeName != volume {
				t.Errorf("claim after the %s: %v, uid %s volume %s; want the same claim on %s", mode, err, now.UID, now.Spec.VolumeName, volume)
			}
		})
	}

	// Retiring the cluster retires its nodes, their claims (waitGone
	// counts them) and so their volumes.
	deleteCluster(t, key)
	eventually(t, 2*time.Minute, "the claim's volume deleted", func() error {
		var pv corev1.PersistentVolume
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: volume}, &pv); !apierrors.IsNotFound(err) {
			return fmt.Errorf("volume %s: %v (phase %s)", volume, err, pv.Status.Phase)
		}
		return nil
	})
}

func restarts(p *corev1.Pod) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == render.ContainerValkey {
			return cs.RestartCount
		}
	}
	return 0
}

// A persistent 3x1 cluster under load has a primary's pod deleted: the
// operator hands the primary's role to its replica first, as for any
// planned stop, and the node comes back on its claim, at a new address,
// as itself (same node ID, still a member, nothing replaced), and rejoins
// as a replica. No acknowledged write is lost.
func TestPersistencePrimaryPodDeletedComesBackAsItself(t *testing.T) {
	t.Parallel()
	const ns = "persist-3x1"
	key := newDurableCluster(t, ns, 3, 1)
	vc := getCluster(t, key)
	members := append([]string(nil), vc.Status.Nodes...)
	node := vc.Status.ShardStatuses[0].Primary
	ctx := context.Background()
	var before corev1.Pod
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &before); err != nil {
		t.Fatal(err)
	}
	id := podMyself(t, ns, node).ID
	c := clusterClient(t, seedOf(key), nil)
	load := startLoad(c, "persist-3x1")
	eventually(t, 30*time.Second, "writes acknowledged before the deletion", func() error {
		if n := load.writes.Load(); n < 200 {
			return fmt.Errorf("%d writes so far", n)
		}
		return nil
	})
	fail(t, ns, node, podDeleted)
	eventually(t, 3*time.Minute, node+" back with a new pod", func() error {
		var p corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &p); err != nil {
			return err
		}
		if p.UID == before.UID {
			return fmt.Errorf("the deleted pod is still there (%s)", podPhase(ns, node))
		}
		if p.Status.PodIP == "" {
			return fmt.Errorf("the new pod has no address yet")
		}
		t.Logf("new pod at %s, the deleted one was at %s", p.Status.PodIP, before.Status.PodIP)
		return nil
	})
	vc = waitConverged(t, key, 3, 1, 5*time.Minute)
	acked := load.finish(t)
	checkAll(t, c, acked)
	if load.stale.Load() > 0 {
		t.Errorf("%d reads returned another value than the one last acknowledged: %v", load.stale.Load(), load.errs)
	}
	if !slices.Equal(sorted(vc.Status.Nodes), sorted(members)) {
		t.Errorf("members %v, were %v: a node was replaced", vc.Status.Nodes, members)
	}
	if got := podMyself(t, ns, node).ID; got != id {
		t.Errorf("node ID %s after its pod was deleted, was %s", got, id)
	}
}

func sorted(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// Every pod of a persistent 3x1 cluster is deleted at once under the
// checking client's load: once on Valkey 8.0.1 with appendfsync always,
// once on 9.1.2 with everysec. Each node comes back on its claim with its
// keys and node ID at a new address, while its nodes.conf knows its peers
// only at their old ones: the cluster must re-form by itself with the same
// members and node IDs and report no loss, and its status must never say
// Active while a node it names answers cluster_state other than ok or with
// slots unassigned. With always no acknowledged write may be lost; with
// everysec only one acknowledged in the last two seconds before the
// deletion may be (Valkey's bound when a flush is postponed), and the loss
// is logged: a deleted pod's valkey-server flushes its file as it stops,
// so it is expected to be none.
func TestPersistenceFullRestartReforms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ns, version string
		mode        valkeyv1.AppendFsync
	}{
		{"persist-full-restart", "8.0.1", valkeyv1.AppendFsyncAlways},
		{"persist-full-everysec", "9.1.2", valkeyv1.AppendFsyncEverysec},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			fullRestart(t, newDurableCluster(t, tc.ns, 3, 1, onValkey(tc.version), withFsync(tc.mode)), tc.mode)
		})
	}
}

func fullRestart(t *testing.T, key client.ObjectKey, mode valkeyv1.AppendFsync) {
	ns := key.Namespace
	vc := getCluster(t, key)
	members := sorted(vc.Status.Nodes)
	ctx := context.Background()
	ids, podUIDs, nodeUIDs := map[string]string{}, map[string]string{}, map[string]string{}
	for _, name := range members {
		ids[name] = podMyself(t, ns, name).ID
		var p corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		podUIDs[name] = string(p.UID)
		var vn valkeyv1.ValkeyNode
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vn); err != nil {
			t.Fatal(err)
		}
		nodeUIDs[name] = string(vn.UID)
	}
	c := clusterClient(t, seedOf(key), nil)
	load := startLoad(c, "persist-full")
	eventually(t, 30*time.Second, "writes acknowledged before the restart", func() error {
		if n := load.writes.Load(); n < 200 {
			return fmt.Errorf("%d writes so far", n)
		}
		return nil
	})
	honesty := watchActiveHonesty(t, key)
	deleted := time.Now()
	t.Logf("deleting every pod at %s", deleted.Format("15:04:05.000"))
	if err := k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns),
		client.MatchingLabels(render.ClusterSelector(key.Name))); err != nil {
		t.Fatalf("deleting every pod of %s: %v", key, err)
	}
	// With everysec the writes acknowledged last before the processes
	// stopped are the ones at risk: the load stops once every old pod is
	// gone, so that each key's last acknowledged value is one of those.
	var acked map[string]string
	if mode == valkeyv1.AppendFsyncEverysec {
		eventually(t, 3*time.Minute, "every old pod gone", func() error {
			for _, name := range members {
				var p corev1.Pod
				err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
				if err == nil && string(p.UID) == podUIDs[name] {
					return fmt.Errorf("%s: still %s", name, p.Status.Phase)
				}
				if err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
			return nil
		})
		acked = load.finish(t)
	}
	eventually(t, 3*time.Minute, "every node back with a new running pod", func() error {
		for _, name := range members {
			var p corev1.Pod
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
				return err
			}
			if string(p.UID) == podUIDs[name] || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				return fmt.Errorf("%s: %s", name, podPhase(ns, name))
			}
		}
		return nil
	})
	back := time.Now()
	t.Logf("every pod back at %s", back.Format("15:04:05.000"))
	// The status read right after the pods came back may still be the one
	// written before the deletion: the nodes themselves say when the
	// cluster has re-formed.
	eventually(t, 5*time.Minute, "every node reaching every other at its new address", func() error {
		return reformed(ns, members)
	})
	vc = waitConverged(t, key, 3, 1, 5*time.Minute)
	lies := honesty.stop()
	if mode == valkeyv1.AppendFsyncEverysec {
		window, rest := load.splitByAckTime(acked, deleted.Add(-2*time.Second), back)
		lost := lostOf(t, c, window)
		t.Logf("everysec: %d of the %d keys last acknowledged from 2 s before the deletion on lost: %v",
			len(lost), len(window), lost[:min(5, len(lost))])
		acked = rest
	} else {
		acked = load.finish(t)
	}
	checkAll(t, c, acked)
	if load.stale.Load() > 0 && mode == valkeyv1.AppendFsyncAlways {
		t.Errorf("%d reads returned another value than the one last acknowledged: %v", load.stale.Load(), load.errs)
	}
	if got := sorted(vc.Status.Nodes); !slices.Equal(got, members) {
		t.Errorf("members %v, were %v: a node was replaced", got, members)
	}
	for _, name := range members {
		if got := podMyself(t, ns, name).ID; got != ids[name] {
			t.Errorf("%s has node ID %s after the restart, was %s", name, got, ids[name])
		}
		var vn valkeyv1.ValkeyNode
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vn); err != nil || string(vn.UID) != nodeUIDs[name] {
			t.Errorf("ValkeyNode %s deleted or recreated (err %v)", name, err)
		}
	}
	for _, cond := range vc.Status.Conditions {
		if cond.Type == "DataLost" && cond.Status == metav1.ConditionTrue {
			t.Errorf("DataLost %s: %s", cond.Reason, cond.Message)
		}
	}
	for _, l := range lies {
		t.Errorf("the status said Active while a node answered otherwise: %s", l)
	}
}

// reformed says what keeps members from being one cluster again: a node
// not at cluster_state:ok with every slot, or knowing a member at another
// address than its pod's, or flagging it failing.
func reformed(ns string, members []string) error {
	ctx := context.Background()
	ips := map[string]string{}
	ids := map[string]string{}
	for _, name := range members {
		var p corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return err
		}
		ips[name] = p.Status.PodIP
	}
	views := map[string]vk.ClusterNodes{}
	for _, name := range members {
		n, err := dialPod(ns, name)
		if err != nil {
			return err
		}
		info, err := n.ClusterInfo(ctx)
		if err != nil {
			n.Close()
			return err
		}
		nodes, err := n.ClusterNodes(ctx)
		n.Close()
		if err != nil {
			return err
		}
		if info.State != "ok" || info.SlotsAssigned != topology.TotalSlots {
			return fmt.Errorf("%s: cluster_state:%s, %d slots assigned", name, info.State, info.SlotsAssigned)
		}
		me, _ := nodes.Myself()
		ids[me.ID], views[name] = name, nodes
	}
	for name, nodes := range views {
		for _, p := range nodes {
			if p.Myself() {
				continue
			}
			other, ok := ids[p.ID]
			if !ok {
				return fmt.Errorf("%s knows %s, no member", name, p.ID)
			}
			if p.IP != ips[other] || p.Failing() {
				return fmt.Errorf("%s knows %s at %q (its pod is at %s), flags %v", name, other, p.IP, ips[other], p.Flags)
			}
		}
	}
	return nil
}

// activeHonesty polls a cluster's status and, whenever it says Active,
// asks every member that answers for its CLUSTER INFO, keeping each time
// one reported cluster_state other than ok or slots unassigned. A member
// that does not answer says nothing either way: its pod is gone or
// starting.
type activeHonesty struct {
	mu   sync.Mutex
	lies []string
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

func watchActiveHonesty(t testing.TB, key client.ObjectKey) *activeHonesty {
	h := &activeHonesty{done: make(chan struct{})}
	t.Cleanup(func() { h.stop() })
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if lie := h.check(key); lie != "" {
				h.mu.Lock()
				h.lies = append(h.lies, lie)
				h.mu.Unlock()
			}
			select {
			case <-h.done:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *activeHonesty) check(key client.ObjectKey) string {
	ctx := context.Background()
	var vc valkeyv1.ValkeyCluster
	if err := k8sClient.Get(ctx, key, &vc); err != nil || vc.Status.State != valkeyv1.StateActive {
		return ""
	}
	for _, name := range vc.Status.Nodes {
		n, err := dialPod(key.Namespace, name)
		if err != nil {
			continue
		}
		info, err := n.ClusterInfo(ctx)
		n.Close()
		if err != nil {
			continue
		}
		if info.State != "ok" || info.SlotsAssigned != topology.TotalSlots {
			return fmt.Sprintf("%s: Active (%s) while %s reports cluster_state:%s with %d slots assigned",
				time.Now().Format("15:04:05.000"), conditionSummary(&vc), name, info.State, info.SlotsAssigned)
		}
	}
	return ""
}

// stop ends the polling and returns what it saw.
func (h *activeHonesty) stop() []string {
	h.once.Do(func() { close(h.done) })
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.lies)
}

// durable is how newDurableCluster makes its cluster.
type durable struct {
	version     string
	persistence valkeyv1.Persistence
	valkey      map[string]string
	edits       []func(*valkeyv1.ValkeyClusterSpec)
}

// durableOption sets one thing a test's persistent cluster needs.
type durableOption func(*durable)

func onValkey(version string) durableOption { return func(d *durable) { d.version = version } }

func withFsync(mode valkeyv1.AppendFsync) durableOption {
	return func(d *durable) { d.persistence.Appendfsync = mode }
}

func onStorageClass(class string) durableOption {
	return func(d *durable) { d.persistence.StorageClassName = class }
}

// withValkeySetting sets one entry of the config's valkey map, such as a
// maxmemory large enough for a benchmark's data set.
func withValkeySetting(key, value string) durableOption {
	return func(d *durable) { d.valkey[key] = value }
}

func withVolumeSize(size resource.Quantity) durableOption {
	return func(d *durable) { d.persistence.Size = size }
}

func withSpec(edit func(*valkeyv1.ValkeyClusterSpec)) durableOption {
	return func(d *durable) { d.edits = append(d.edits, edit) }
}

// newDurableCluster creates namespace ns and in it the cluster "durable"
// of the given shape, with a 1Gi volume per node of the default class, on
// Valkey 8.0.1 with appendfsync always (so every acknowledged write is on
// its volume) unless opts say otherwise.
func newDurableCluster(t testing.TB, ns string, shards, replicas int, opts ...durableOption) client.ObjectKey {
	t.Helper()
	d := durable{version: "8.0.1", persistence: valkeyv1.Persistence{Size: resource.MustParse("1Gi"), Appendfsync: valkeyv1.AppendFsyncAlways},
		valkey: map[string]string{"maxmemory": "64mb"}}
	for _, opt := range opts {
		opt(&d)
	}
	createNamespace(t, ns)
	cfg := createConfig(t, menuConfigName(ns), d.version, valkeyv1.ValkeyConfigSpec{
		Valkey:      d.valkey,
		Persistence: &d.persistence,
	})
	return newClusterWith(t, ns, "durable", cfg, shards, replicas, d.edits...)
}
