package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// A persistent replica that comes back with an old append-only file while
// its primary is down must wait for that primary, not take its place: in a
// persistent 1x1 cluster the replica's pod is deleted and held off (its
// volume's Kubernetes node cordoned) while the primary takes more writes,
// then the primary's pod is deleted and held off the same way, and the
// replica is let back first. It loads its stale file and finds no primary:
// neither Valkey (no quorum to elect it, and it never synced since it
// started) nor the operator (a persistent primary whose pod is gone comes
// back on its volume; only a synced replica may be promoted) may make it
// the primary. Once the primary is let back it serves every write it
// acknowledged, and the replica resynchronises from it.
func TestPersistenceStaleReplicaIsNotPromoted(t *testing.T) {
	t.Parallel()
	const ns = "persist-stale-replica"
	key := newDurableCluster(t, ns, 1, 1)
	vc := getCluster(t, key)
	primary := vc.Status.ShardStatuses[0].Primary
	var replica string
	for _, n := range vc.Status.Nodes {
		if n != primary {
			replica = n
		}
	}
	pPod, rPod := getPod(t, ns, primary), getPod(t, ns, replica)
	if pPod.Spec.NodeName == rPod.Spec.NodeName {
		t.Fatalf("primary and replica both on %s: the zone spread should have parted them", pPod.Spec.NodeName)
	}
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "stale-before", 300)
	waitReplicated(t, c)
	failovers := countEvents(t, key, string(topology.KindFailover), "")

	holdOff := func(pod *corev1.Pod) {
		t.Helper()
		setUnschedulable(t, pod.Spec.NodeName, true)
		t.Cleanup(func() { setUnschedulable(t, pod.Spec.NodeName, false) })
		fail(t, ns, pod.Name, podDeleted)
		eventually(t, 2*time.Minute, pod.Name+"'s pod gone", func() error {
			var p corev1.Pod
			err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pod), &p)
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return err
			case p.UID == pod.UID:
				return fmt.Errorf("still %s", podPhase(ns, pod.Name))
			case p.Status.Phase == corev1.PodRunning:
				return fmt.Errorf("a new pod runs already on %s", p.Spec.NodeName)
			}
			return nil
		})
	}
	holdOff(rPod)
	// Writes only the primary has: the replica's file stops before them.
	during := writeKeys(t, c, "stale-during", 300)
	holdOff(pPod)

	setUnschedulable(t, rPod.Spec.NodeName, false)
	eventually(t, 2*time.Minute, replica+" back on its stale file", func() error {
		keys, err := podKeys(ns, replica)
		if err != nil {
			return err
		}
		if keys != len(before) {
			return fmt.Errorf("%d keys loaded, want the %d written before it stopped", keys, len(before))
		}
		return nil
	})
	// Valkey would elect it within its node timeout (5 s) and the operator
	// acts on every change it sees: three times that long without either
	// is the proof that neither will.
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		me := podMyself(t, ns, replica)
		if me.PrimaryID == "" {
			t.Fatalf("%s, back with %d of %d keys, was made a primary: %v", replica, len(before), len(before)+len(during), me.Flags)
		}
		if n := countEvents(t, key, string(topology.KindFailover), ""); n != failovers {
			t.Fatalf("%d Failover Events while the only synced copy was the stopped primary", n-failovers)
		}
		time.Sleep(500 * time.Millisecond) // sampling an invariant, not waiting for a state
	}
	vc = getCluster(t, key)
	if vc.Status.State == valkeyv1.StateActive {
		t.Errorf("status Active while the only primary is down: %s", conditionSummary(vc))
	}
	t.Logf("while the primary was held off: %s, %s", vc.Status.State, conditionSummary(vc))

	setUnschedulable(t, pPod.Spec.NodeName, false)
	vc = waitConverged(t, key, 1, 1, 5*time.Minute)
	if got := vc.Status.ShardStatuses[0].Primary; got != primary {
		t.Errorf("primary is %s, want %s back", got, primary)
	}
	checkAll(t, c, before)
	checkAll(t, c, during)
	eventually(t, time.Minute, replica+" resynchronised", func() error {
		keys, err := podKeys(ns, replica)
		if err != nil {
			return err
		}
		if want := len(before) + len(during); keys != want {
			return fmt.Errorf("%d keys, want %d", keys, want)
		}
		return nil
	})
	assertNoDataLoss(t, key)
}

func getPod(t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// podKeys is the number of keys a node holds, as its INFO keyspace says.
func podKeys(ns, name string) (int, error) {
	n, err := dialPod(ns, name)
	if err != nil {
		return 0, err
	}
	defer n.Close()
	info, err := n.Info(context.Background(), "keyspace")
	if err != nil {
		return 0, err
	}
	keys, err := backup.KeyCount(info["keyspace"])
	return int(keys), err
}
