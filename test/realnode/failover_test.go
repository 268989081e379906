package realnode

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/render"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// TestPrimaryPodDeleted runs a 3x1 cluster on the real node, writes 500
// keys, deletes one primary's pod and waits for the cluster to heal: the
// replica promoted, a new replica joined in the lost pod's place, every
// key read back.
func TestPrimaryPodDeleted(t *testing.T) {
	ns := "failover"
	createNamespace(t, ns)
	t0 := time.Now()
	key := createCluster(t, ns, "cache", createMenu(t, "failover", false), 3, 1)
	// Six pods on one node: check the node holds what they request before
	// waiting on a scheduler that would say Insufficient.
	eventually(t, 2*time.Minute, "six pods", func() error {
		if n := len(clusterPods(t, key)); n < 6 {
			return errors.New(strconv.Itoa(n) + " pods")
		}
		return nil
	})
	logCapacity(t, key)
	vc := waitConverged(t, key, 3, 1, 5*time.Minute)
	t.Logf("3x1 cluster created → Active in %v", time.Since(t0).Round(100*time.Millisecond))
	_, lag := waitPodsHealthy(t, key, 6, 30*time.Second)
	t.Logf("every pod Ready %v after the cluster is Active", lag.Round(10*time.Millisecond))
	t.Logf("conditions healthy %v later", waitHealthyConditions(t, key, time.Minute).Round(10*time.Millisecond))

	var primary, replica string
	var shard int32
	for _, sh := range vc.Status.ShardStatuses {
		if sh.Primary != "" && len(sh.Replicas) == 1 {
			primary, replica, shard = sh.Primary, sh.Replicas[0], sh.Index
			break
		}
	}
	if primary == "" {
		t.Fatalf("no shard with a primary and a replica in %+v", vc.Status.ShardStatuses)
	}
	var seed string
	var hold time.Duration
	for _, p := range clusterPods(t, key) {
		if p.Name != primary {
			seed = p.Status.PodIP
			continue
		}
		for _, c := range p.Spec.Containers {
			if c.Name == render.ContainerValkey && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
				hold = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
			}
		}
	}
	if hold == 0 {
		t.Fatalf("the Valkey container of %s has no preStop sleep", primary)
	}
	c := clusterClient(t, seed)
	want := writeKeys(t, c, "k", 500)
	waitReplicated(t, c)

	t1 := time.Now()
	if err := k8sClient.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: primary}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted primary %s of shard %d", primary, shard)
	// The pod's preStop hook holds Valkey serving while the operator hands
	// the primary's role to its replica: the replica is primary before the
	// hold ends and the kubelet sends SIGTERM.
	eventually(t, hold, replica+" promoted during the preStop hold", func() error {
		n, err := dialPod(ns, replica)
		if err != nil {
			return err
		}
		defer n.Close()
		repl, err := n.InfoReplication(context.Background())
		if err != nil {
			return err
		}
		if repl.Role != vk.RolePrimary {
			return fmt.Errorf("%s is %s", replica, repl.Role)
		}
		return nil
	})
	t.Logf("replica %s primary %v after the delete", replica, time.Since(t1).Round(10*time.Millisecond))
	vc = waitConverged(t, key, 3, 1, 5*time.Minute, primary)
	t.Logf("primary pod deleted → Active again in %v", time.Since(t1).Round(100*time.Millisecond))
	for _, sh := range vc.Status.ShardStatuses {
		if sh.Index == shard && sh.Primary != replica {
			t.Errorf("shard %d: primary %s, want the promoted replica %s", shard, sh.Primary, replica)
		}
	}
	pods, lag := waitPodsHealthy(t, key, 6, 30*time.Second)
	t.Logf("every pod Ready %v after the cluster is Active again", lag.Round(10*time.Millisecond))
	t.Logf("conditions healthy %v later", waitHealthyConditions(t, key, time.Minute).Round(10*time.Millisecond))
	for _, p := range pods {
		if p.Name == primary {
			t.Errorf("the deleted pod %s is back", primary)
		}
	}
	checkAll(t, c, want)
}

// logCapacity logs what the cluster's pods request against what the node
// can allocate, and fails when they do not fit. A cluster a kubeconfig
// names may have several nodes, which the scheduler spreads them over.
func logCapacity(t testing.TB, key client.ObjectKey) {
	t.Helper()
	if !nodeIsLocal() {
		return
	}
	var n corev1.Node
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: node.Name}, &n); err != nil {
		t.Fatal(err)
	}
	req := corev1.ResourceList{}
	pods := clusterPods(t, key)
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				sum := req[name]
				sum.Add(q)
				req[name] = sum
			}
		}
	}
	alloc := n.Status.Allocatable
	t.Logf("node %s allocatable cpu %s memory %s pods %s; %d pods request cpu %s memory %s",
		n.Name, alloc.Cpu(), alloc.Memory(), alloc.Pods(), len(pods), qty(req, corev1.ResourceCPU), qty(req, corev1.ResourceMemory))
	for name, q := range req {
		if a, ok := alloc[name]; ok && q.Cmp(a) > 0 {
			t.Fatalf("the pods request %s %s, the node allocates %s", name, q.String(), a.String())
		}
	}
	if int64(len(pods)) > alloc.Pods().Value() {
		t.Fatalf("%d pods, the node takes %d", len(pods), alloc.Pods().Value())
	}
}

func qty(l corev1.ResourceList, name corev1.ResourceName) string {
	q := l[name]
	return q.String()
}
