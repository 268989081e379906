package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeTimeout is the forced cluster-node-timeout the stalls are measured in.
const nodeTimeout = 5 * time.Second

// A primary without a replica that stalls past cluster-node-timeout (a long
// fork, CPU throttling, a paused process) is flagged FAIL by its peers while
// its pod keeps running. Its keys live only in its memory: the operator must
// neither forget it nor hand its slots elsewhere, during the stall or in the
// seconds after it resumes while the flag is still set. Every key written
// before, and every write acknowledged meanwhile, must be readable after.
func TestStalledPrimaryIsNotForgotten(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "stall", "cache", 3, 0)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)

	// The long stall outlasts what a liveness probe would allow (three
	// failed checks ten seconds apart), with clients piling up connection
	// attempts on the stalled process as they do in production until its
	// accept backlog is full: a slow process is no dead one, and nothing
	// of the operator's may kill it for being slow.
	for i, stall := range []time.Duration{2 * nodeTimeout, 8 * nodeTimeout} {
		t.Run(fmt.Sprintf("stalled for %s", stall), func(t *testing.T) {
			vc := getCluster(t, key)
			victim := vc.Status.ShardStatuses[0].Primary
			victimID := podMyself(t, key.Namespace, victim).ID
			witness := vc.Status.ShardStatuses[1].Primary
			load := startLoad(c, fmt.Sprintf("stall-%d", i))
			if stall > 6*nodeTimeout {
				defer floodConnections(t, key.Namespace, victim, 1500)()
			}

			stopped := stallFor(t, key, victim, victimID, witness, stall)
			// The dangerous window is after the resume: the node answers
			// while its peers still flag it FAIL, until Valkey clears the
			// flag by itself.
			eventually(t, time.Minute, witness+" clears the FAIL flag of "+victim, func() error {
				if flagged(key, witness, victimID) == nil {
					return fmt.Errorf("still flagged FAIL")
				}
				return nil
			})
			t.Logf("flag cleared %s after the resume", time.Since(stopped.Add(stall)).Round(100*time.Millisecond))

			waitConverged(t, key, 3, 0, 3*time.Minute)
			if n := countEvents(t, key, "Forget", victim); n > 0 {
				t.Fatalf("the operator forgot the stalled primary %s (%d Forget events)", victim, n)
			}
			acked := load.finish(t)
			vc = getCluster(t, key)
			if !slices.Contains(vc.Status.Nodes, victim) {
				t.Fatalf("%s was replaced after stalling: members %v", victim, vc.Status.Nodes)
			}
			if me := podMyself(t, key.Namespace, victim); me.ID != victimID || me.SlotCount() == 0 {
				t.Fatalf("%s after the stall: ID %s (was %s), %d slots", victim, me.ID, victimID, me.SlotCount())
			}
			checkAll(t, c, before)
			checkAll(t, c, acked)
		})
	}
}

// stallFor pauses victim's valkey-server (SIGSTOP) until witness flags it
// FAIL and stall has passed, then resumes it; it returns when the stall
// began. The stall's length is what the test provokes, not a wait for the
// operator.
func stallFor(t *testing.T, key client.ObjectKey, victim, victimID, witness string, stall time.Duration) time.Time {
	t.Helper()
	signal(t, key, victim, syscall.SIGSTOP)
	stopped := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			signal(t, key, victim, syscall.SIGCONT)
		}
	})
	eventually(t, time.Minute, witness+" flags "+victim+" FAIL", func() error {
		return flagged(key, witness, victimID)
	})
	t.Logf("%s flagged FAIL %s after the stall began", victim, time.Since(stopped).Round(100*time.Millisecond))
	time.Sleep(time.Until(stopped.Add(stall)))
	signal(t, key, victim, syscall.SIGCONT)
	resumed = true
	return stopped
}

// floodConnections opens n connections to pod's client port, as many
// reconnecting clients do, and keeps them open until the returned func
// closes them. Against a stopped process they fill its accept backlog, and
// the attempts past it hang.
func floodConnections(t testing.TB, ns, pod string, n int) func() {
	t.Helper()
	var p corev1.Pod
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pod}, &p); err != nil {
		t.Fatalf("reading pod %s: %v", pod, err)
	}
	addr := net.JoinHostPort(p.Status.PodIP, "6379")
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := local.Runtime.DialContext(ctx, "tcp", addr)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		t.Logf("%d of %d connection attempts to %s were accepted by the kernel", len(conns), n, pod)
		for _, c := range conns {
			c.Close()
		}
	}
}

// signal sends sig to a pod's valkey-server.
func signal(t testing.TB, key client.ObjectKey, pod string, sig syscall.Signal) {
	t.Helper()
	if err := local.Runtime.SignalContainer(key.Namespace, pod, "valkey", sig); err != nil {
		t.Fatalf("%s to %s: %v", sig, pod, err)
	}
}

// flagged is nil once witness's CLUSTER NODES marks id as failed (FAIL, not
// just PFAIL).
func flagged(key client.ObjectKey, witness, id string) error {
	n, err := dialPod(key.Namespace, witness)
	if err != nil {
		return err
	}
	defer n.Close()
	nodes, err := n.ClusterNodes(context.Background())
	if err != nil {
		return err
	}
	p, ok := nodes.ByID(id)
	if !ok {
		return fmt.Errorf("%s does not know %s", witness, id)
	}
	if !slices.Contains(p.Flags, "fail") {
		return fmt.Errorf("flags %s", strings.Join(p.Flags, ","))
	}
	return nil
}

// A primary with a replica that stalls past cluster-node-timeout is
// replaced by Valkey's own failover (a quorum of primaries votes), and
// when it resumes it finds a newer epoch and follows the replica it had.
// A stall of twice the node timeout leaves Valkey about two seconds after
// the FAIL flag to elect the replica; on a busy machine the election may
// not finish before the primary resumes, which then keeps its slots and
// its replica. Either outcome is Valkey's; after the longer stall the
// replica must have been promoted.
// The operator must not forget it or replace its pod meanwhile: it is a
// running member that only paused. Every key written before the stall and
// replicated, and every write acknowledged outside the moment the stall
// began (asynchronous replication's documented loss), must be readable.
func TestStalledPrimaryWithReplicaRejoins(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "stall-replica", "cache", 3, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)
	waitReplicated(t, c)

	for i, stall := range []time.Duration{2 * nodeTimeout, 6 * nodeTimeout} {
		t.Run(fmt.Sprintf("stalled for %s", stall), func(t *testing.T) {
			vc := getCluster(t, key)
			// The first stall's failover swapped shard 0's roles, which the
			// status shows only at its next refresh: ask the nodes.
			victim := ""
			for _, n := range append([]string{vc.Status.ShardStatuses[0].Primary}, vc.Status.ShardStatuses[0].Replicas...) {
				if podMyself(t, key.Namespace, n).SlotCount() > 0 {
					victim = n
				}
			}
			victimID := podMyself(t, key.Namespace, victim).ID
			witness := vc.Status.ShardStatuses[1].Primary
			load := startLoad(c, fmt.Sprintf("stall-%d", i))

			stopped := stallFor(t, key, victim, victimID, witness, stall)

			if stall > 2*nodeTimeout {
				eventually(t, time.Minute, victim+" follows the promoted replica", func() error {
					if me := podMyself(t, key.Namespace, victim); me.SlotCount() > 0 {
						return fmt.Errorf("%s still serves %d slots", victim, me.SlotCount())
					}
					return nil
				})
			}
			waitConverged(t, key, 3, 1, 3*time.Minute)
			if me := podMyself(t, key.Namespace, victim); me.SlotCount() > 0 {
				t.Logf("%s resumed before Valkey elected its replica and kept its %d slots", victim, me.SlotCount())
			}
			vc = getCluster(t, key)
			if !slices.Contains(vc.Status.Nodes, victim) {
				t.Fatalf("%s was replaced after stalling: members %v", victim, vc.Status.Nodes)
			}
			if n := countEvents(t, key, "Forget", victim); n > 0 {
				t.Fatalf("the operator forgot the stalled primary %s (%d Forget events)", victim, n)
			}
			if me := podMyself(t, key.Namespace, victim); me.ID != victimID {
				t.Fatalf("%s after the stall: ID %s, was %s", victim, me.ID, victimID)
			}
			acked := load.finish(t)
			checkAll(t, c, before)
			lagWindow, rest := load.splitByAckTime(acked, stopped.Add(-time.Second), stopped.Add(time.Second))
			checkAll(t, c, rest)
			t.Logf("%s stalled, replaced by its replica; writes acknowledged around the stall and lost: %d of %d",
				victim, countLost(c, lagWindow), len(lagWindow))
		})
	}
}
