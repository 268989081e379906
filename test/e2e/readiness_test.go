package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// syncDelay holds every full sync of the test's primary that long
// (repl-diskless-sync-delay): a replacement replica stays empty for a
// window the test controls instead of the few milliseconds a small data
// set takes.
const syncDelay = 20 * time.Second

// A replica still loading its primary's data is not available: its pod is
// not Ready (the synced readiness gate is False), so the shard's budget
// refuses to evict the primary, which holds the only copy of the keys,
// until the replica has them.
func TestSyncingReplicaHoldsEvictions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := "readiness-gate"
	createNamespace(t, ns)
	cfg := createConfig(t, "slow-sync-"+ns, "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{
		"maxmemory":                "64mb",
		"repl-diskless-sync":       "yes",
		"repl-diskless-sync-delay": fmt.Sprint(int(syncDelay / time.Second)),
	}})
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1, ReplicasPerShard: 1}}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatalf("creating %s: %v", vc.Name, err)
	}
	deleteAtEnd(t, vc)
	key := client.ObjectKeyFromObject(vc)
	vc = waitConverged(t, key, 1, 1, 5*time.Minute)
	primary, replica := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[0].Replicas[0]
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 1000)
	assertEvictable(t, key, primary, true)

	signal(t, key, replica, syscall.SIGKILL)
	var fresh string
	eventually(t, 2*time.Minute, "a replacement replica running", func() error {
		for name, p := range clusterPods(t, key) {
			if name != primary && name != replica && p.Status.Phase == corev1.PodRunning {
				fresh = name
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	eventually(t, syncDelay, fresh+" reported as not synced", func() error {
		p := clusterPods(t, key)[fresh]
		gate := podCondition(p, valkeyv1.ConditionSynced)
		if gate == nil || gate.Status != corev1.ConditionFalse {
			return fmt.Errorf("gate %+v", gate)
		}
		if ready := podCondition(p, corev1.PodReady); ready == nil || ready.Status != corev1.ConditionFalse {
			return fmt.Errorf("Ready %+v while the gate is False", ready)
		}
		t.Logf("%s: %s %s", fresh, gate.Reason, gate.Message)
		return nil
	})
	// Still inside the sync delay: the replica holds nothing yet.
	if n := dbSize(t, key, fresh); n != 0 {
		t.Fatalf("%s already holds %d keys; the window under test is over", fresh, n)
	}
	assertEvictable(t, key, primary, false)

	eventually(t, 2*syncDelay+time.Minute, fresh+" synced and Ready", func() error {
		p := clusterPods(t, key)[fresh]
		if ready := podCondition(p, corev1.PodReady); ready == nil || ready.Status != corev1.ConditionTrue {
			return fmt.Errorf("Ready %+v, gate %+v", ready, podCondition(p, valkeyv1.ConditionSynced))
		}
		return nil
	})
	if n := dbSize(t, key, fresh); n < int64(len(before)) {
		t.Errorf("%s Ready with %d keys, want at least %d", fresh, n, len(before))
	}
	vc = waitConverged(t, key, 1, 1, 2*time.Minute)
	if !slices.Contains(vc.Status.ShardStatuses[0].Replicas, fresh) {
		t.Errorf("replicas %v, want %s among them", vc.Status.ShardStatuses[0].Replicas, fresh)
	}
	assertEvictable(t, key, primary, true)
	checkAll(t, c, before)
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	if p == nil {
		return nil
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// assertEvictable checks with a dry-run eviction whether the budget lets
// pod go now. The disruption controller recounts after pod changes, so a
// verdict is polled for.
func assertEvictable(t testing.TB, key client.ObjectKey, pod string, want bool) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("eviction of %s allowed=%v", pod, want), func() error {
		p := clusterPods(t, key)[pod]
		if p == nil {
			return fmt.Errorf("no pod %s", pod)
		}
		err := k8sClient.SubResource("eviction").Create(context.Background(), p, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		}, client.DryRunAll)
		switch {
		case want && err != nil:
			return fmt.Errorf("refused: %v", err)
		case !want && err == nil:
			return fmt.Errorf("allowed")
		case !want && !apierrors.IsTooManyRequests(err):
			return fmt.Errorf("refused with %v, want 429", err)
		}
		return nil
	})
}

func dbSize(t testing.TB, key client.ObjectKey, pod string) int64 {
	t.Helper()
	n, err := dialPod(key.Namespace, pod)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	info, err := n.Info(context.Background(), "keyspace")
	if err != nil {
		t.Fatalf("INFO keyspace on %s: %v", pod, err)
	}
	// db0:keys=1000,expires=0,avg_ttl=0; no line while the node is empty.
	for _, field := range strings.Split(info["keyspace"]["db0"], ",") {
		if v, ok := strings.CutPrefix(field, "keys="); ok {
			size, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO keyspace on %s: %q", pod, info["keyspace"]["db0"])
			}
			return size
		}
	}
	return 0
}
