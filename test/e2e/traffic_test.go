package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// clientLoad is a cluster-aware client writing fresh keys and reading back
// earlier ones for as long as a change runs. Every write the server
// acknowledged is remembered, so the test can demand all of them back
// afterwards; failed requests are counted and reported, not asserted, since
// a failover or a MOVED storm may legitimately fail a few.
type clientLoad struct {
	c      valkey.Client
	prefix string

	mu    sync.Mutex
	acked map[string]string
	ackAt map[string]time.Time
	order []string
	errs  []string

	writes, reads, writeErrs, readErrs, stale atomic.Int64
	start                                     time.Time
	stop, done                                chan struct{}
}

func startLoad(c valkey.Client, prefix string) *clientLoad {
	l := &clientLoad{c: c, prefix: prefix, acked: map[string]string{}, ackAt: map[string]time.Time{}, start: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

func (l *clientLoad) run() {
	defer close(l.done)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		k, v := fmt.Sprintf("%s:%d", l.prefix, i), fmt.Sprintf("v%d", i)
		if err := l.c.Do(ctx, l.c.B().Set().Key(k).Value(v).Build()).Error(); err != nil {
			l.writeErrs.Add(1)
			l.note("SET", err)
		} else {
			l.writes.Add(1)
			l.mu.Lock()
			l.acked[k] = v
			l.ackAt[k] = time.Now()
			l.order = append(l.order, k)
			l.mu.Unlock()
		}
		l.mu.Lock()
		var rk string
		if len(l.order) > 0 {
			rk = l.order[rng.IntN(len(l.order))]
		}
		want := l.acked[rk]
		l.mu.Unlock()
		if rk != "" {
			got, err := l.c.Do(ctx, l.c.B().Get().Key(rk).Build()).ToString()
			switch {
			case err != nil && !valkey.IsValkeyNil(err):
				l.readErrs.Add(1)
				l.note("GET", err)
			case got != want:
				l.stale.Add(1)
				l.note("GET", fmt.Errorf("%s = %q, want %q", rk, got, want))
			default:
				l.reads.Add(1)
			}
		}
		cancel()
		time.Sleep(2 * time.Millisecond) // pacing the client, not waiting for the operator
	}
}

func (l *clientLoad) note(op string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 5 {
		l.errs = append(l.errs, fmt.Sprintf("%s after %s: %v", op, time.Since(l.start).Round(time.Millisecond), err))
	}
}

// finish stops the client, logs what it saw and returns every acknowledged
// write. It fails the test only when nothing succeeded at all.
func (l *clientLoad) finish(t testing.TB) map[string]string {
	t.Helper()
	close(l.stop)
	<-l.done
	t.Logf("client load over %s: %d writes ok, %d failed; %d reads ok, %d failed, %d wrong or missing; first errors: %v",
		time.Since(l.start).Round(time.Second), l.writes.Load(), l.writeErrs.Load(),
		l.reads.Load(), l.readErrs.Load(), l.stale.Load(), l.errs)
	if l.writes.Load() == 0 {
		t.Fatal("no write succeeded during the change")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.acked))
	for k, v := range l.acked {
		out[k] = v
	}
	return out
}

// splitByAckTime separates the acknowledged writes into those acknowledged
// between from and to and all others.
func (l *clientLoad) splitByAckTime(acked map[string]string, from, to time.Time) (inside, outside map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	inside, outside = map[string]string{}, map[string]string{}
	for k, v := range acked {
		if at := l.ackAt[k]; !at.Before(from) && !at.After(to) {
			inside[k] = v
		} else {
			outside[k] = v
		}
	}
	return inside, outside
}

// countLost counts the keys of want that are missing or hold another value.
func countLost(c valkey.Client, want map[string]string) int {
	lost := 0
	for k, v := range want {
		got, err := c.Do(context.Background(), c.B().Get().Key(k).Build()).ToString()
		if err != nil || got != v {
			lost++
		}
	}
	return lost
}

// checkAll reads every key back, retrying briefly so a client that has not
// yet learned the final topology is not mistaken for lost data, and reports
// every key that is missing or wrong.
func checkAll(t testing.TB, c valkey.Client, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var bad []string
	eventually(t, time.Minute, fmt.Sprintf("%d keys readable", len(keys)), func() error {
		bad = bad[:0]
		for _, k := range keys {
			got, err := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
			if err != nil && !valkey.IsValkeyNil(err) {
				return fmt.Errorf("GET %s: %w", k, err)
			}
			if got != want[k] {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%d of %d keys missing or wrong, e.g. %v", len(bad), len(keys), bad[:min(5, len(bad))])
		}
		return nil
	})
}

// assertEvenSlots checks from the nodes themselves that the primaries
// serve all 16384 slots between them, each within one batch of the others.
func assertEvenSlots(t testing.TB, ns string, vc *valkeyv1.ValkeyCluster, shards int) {
	t.Helper()
	counts := map[string]int{}
	eventually(t, time.Minute, "every node agreeing on an even slot map", func() error {
		clear(counts)
		var first string
		for _, name := range vc.Status.Nodes {
			n, err := dialPod(ns, name)
			if err != nil {
				return err
			}
			nodes, err := n.ClusterNodes(context.Background())
			n.Close()
			if err != nil {
				return err
			}
			view := map[string]int{}
			for _, cn := range nodes {
				if cn.IsPrimary() && cn.SlotCount() > 0 && !cn.Failing() {
					view[cn.ID] = cn.SlotCount()
				}
			}
			if s := fmt.Sprint(view); first == "" {
				first = s
				for k, v := range view {
					counts[k] = v
				}
			} else if s != first {
				return fmt.Errorf("node %s sees %s, another node %s", name, s, first)
			}
		}
		return nil
	})
	total, lo, hi := 0, topology.TotalSlots, 0
	for _, c := range counts {
		total += c
		lo, hi = min(lo, c), max(hi, c)
	}
	if len(counts) != shards || total != topology.TotalSlots || hi-lo > topology.DefaultBatchSize {
		t.Fatalf("slot map %v: %d primaries, %d slots, spread %d; want %d primaries, all slots, spread <= %d",
			counts, len(counts), total, hi-lo, shards, topology.DefaultBatchSize)
	}
	t.Logf("slots per primary: %v", counts)
}

// dialPod connects to one pod of a plaintext cluster as the default user,
// which is open while the cluster has no ACL binding.
func dialPod(ns, name string) (*vk.Node, error) {
	var pod corev1.Pod
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return nil, err
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s has no address", name)
	}
	return vk.Dial(context.Background(), vk.Target{Address: net.JoinHostPort(pod.Status.PodIP, "6379"), Dialer: local.Runtime.DialContext})
}

// podMyself is a pod's own line of CLUSTER NODES: its ID, slots and any
// slot it is migrating or importing.
func podMyself(t testing.TB, ns, name string) vk.ClusterNode {
	t.Helper()
	n, err := dialPod(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	nodes, err := n.ClusterNodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	me, _ := nodes.Myself()
	return me
}

// waitConverged waits for waitActive's shape and more: every ValkeyNode
// Active (no join or departure in flight), and the nodes themselves
// reporting exactly shards primaries with slots and shards*replicas
// replicas whose link is up.
func waitConverged(t testing.TB, key client.ObjectKey, shards, replicas int, timeout time.Duration) *valkeyv1.ValkeyCluster {
	t.Helper()
	start := time.Now()
	var vc *valkeyv1.ValkeyCluster
	eventually(t, timeout, fmt.Sprintf("%s converged to %dx%d", key, shards, replicas), func() error {
		vc = getCluster(t, key)
		s := vc.Status
		if s.State != valkeyv1.StateActive || s.SlotsAssigned != topology.TotalSlots || int(s.Shards) != shards || len(s.Nodes) != shards*(1+replicas) {
			return fmt.Errorf("state %q, %d slots, %d shards, %d nodes; conditions %v", s.State, s.SlotsAssigned, s.Shards, len(s.Nodes), conditionSummary(vc))
		}
		// Active alone also covers healing; the planner's Done is what says
		// the whole change, slot balance included, is finished.
		if p := meta.FindStatusCondition(s.Conditions, "Progressing"); p == nil || p.Status != metav1.ConditionFalse || p.ObservedGeneration != vc.Generation {
			return fmt.Errorf("still progressing: %v", conditionSummary(vc))
		}
		if r := s.Resharding; r != nil {
			return fmt.Errorf("resharding %s, moving %+v", r.Progress, r.Moving)
		}
		var nodes valkeyv1.ValkeyNodeList
		if err := k8sClient.List(context.Background(), &nodes, client.InNamespace(key.Namespace), client.MatchingLabels{valkeyv1.LabelInstance: key.Name}); err != nil {
			return err
		}
		if len(nodes.Items) != len(s.Nodes) {
			return fmt.Errorf("%d ValkeyNodes", len(nodes.Items))
		}
		for _, n := range nodes.Items {
			if n.Spec.Lifecycle != valkeyv1.LifecycleActive {
				return fmt.Errorf("node %s is %s", n.Name, n.Spec.Lifecycle)
			}
		}
		primaries, linked := 0, 0
		for _, name := range s.Nodes {
			n, err := dialPod(key.Namespace, name)
			if err != nil {
				return err
			}
			repl, err := n.InfoReplication(context.Background())
			if err != nil {
				n.Close()
				return err
			}
			cn, err := n.ClusterNodes(context.Background())
			n.Close()
			if err != nil {
				return err
			}
			me, _ := cn.Myself()
			switch {
			case repl.Role == vk.RoleReplica && repl.PrimaryLinkStatus == "up":
				linked++
			case repl.Role == vk.RolePrimary && me.SlotCount() > 0:
				primaries++
			default:
				return fmt.Errorf("node %s: role %s, link %q, %d slots", name, repl.Role, repl.PrimaryLinkStatus, me.SlotCount())
			}
		}
		if primaries != shards || linked != shards*replicas {
			return fmt.Errorf("%d primaries with slots, %d linked replicas", primaries, linked)
		}
		return nil
	})
	for _, sh := range vc.Status.ShardStatuses {
		if len(sh.Replicas) != replicas {
			t.Fatalf("shard %d has %d replicas, want %d", sh.Index, len(sh.Replicas), replicas)
		}
	}
	t.Logf("%s converged to %dx%d in %s", key, shards, replicas, time.Since(start).Round(time.Second))
	return vc
}

// updateCluster applies mutate to the latest version of the cluster.
func updateCluster(t testing.TB, key client.ObjectKey, mutate func(vc *valkeyv1.ValkeyCluster)) {
	t.Helper()
	eventually(t, 30*time.Second, "updating "+key.String(), func() error {
		vc := getCluster(t, key)
		mutate(vc)
		return k8sClient.Update(context.Background(), vc)
	})
}

// newPlainCluster creates a Valkey 8 cluster from its own menu and waits
// for it to be Active.
func newPlainCluster(t testing.TB, ns, name string, shards, replicas int) client.ObjectKey {
	t.Helper()
	createNamespace(t, ns)
	cfg := createMenu(t, ns)
	vc := &valkeyv1.ValkeyCluster{}
	vc.Namespace, vc.Name = ns, name
	vc.Spec = valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: int32(shards), ReplicasPerShard: int32(replicas)}
	if err := k8sClient.Create(context.Background(), vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	key := client.ObjectKeyFromObject(vc)
	start := time.Now()
	waitConverged(t, key, shards, replicas, 5*time.Minute)
	t.Logf("%dx%d cluster ready after %s", shards, replicas, time.Since(start).Round(time.Second))
	return key
}

func seedOf(key client.ObjectKey) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local:6379", key.Name, key.Namespace)
}
