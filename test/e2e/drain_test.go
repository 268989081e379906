package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/render"
)

// A Kubernetes node running a primary and a replica can be drained the way
// kubectl drain does it: cordon, then evict every pod through the eviction
// API, retrying while a budget refuses. Each shard's budget lets one pod go
// at a time; the operator replaces it on another node; the drain finishes
// with the cluster whole and every write acknowledged outside the moments
// of the evictions readable.
func TestDrainNodeWithPrimaries(t *testing.T) {
	ctx := context.Background()
	key := newPlainCluster(t, "drain", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)

	vc := getCluster(t, key)
	var primary corev1.Pod
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: vc.Status.ShardStatuses[0].Primary}, &primary); err != nil {
		t.Fatal(err)
	}
	nodeName := primary.Spec.NodeName
	setUnschedulable(t, nodeName, true)
	t.Cleanup(func() { setUnschedulable(t, nodeName, false) })

	load := startLoad(c, "drain")
	var evictedAt []time.Time
	eventually(t, 4*time.Minute, "every pod of the cluster evicted from "+nodeName, func() error {
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels(render.ClusterSelector(key.Name))); err != nil {
			return err
		}
		left := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != nodeName || !p.DeletionTimestamp.IsZero() {
				continue
			}
			left++
			err := k8sClient.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			})
			switch {
			case err == nil:
				evictedAt = append(evictedAt, time.Now())
				t.Logf("evicted %s", p.Name)
			case apierrors.IsTooManyRequests(err), apierrors.IsNotFound(err):
				// The budget holds it until the shard is whole again.
			default:
				return fmt.Errorf("evicting %s: %w", p.Name, err)
			}
		}
		if left > 0 {
			return fmt.Errorf("%d pods of the cluster still on %s", left, nodeName)
		}
		return nil
	})
	if len(evictedAt) == 0 {
		t.Fatalf("no pod of the cluster ran on %s", nodeName)
	}

	vc = waitConverged(t, key, 2, 1, 4*time.Minute)
	for _, name := range vc.Status.Nodes {
		var p corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName == nodeName {
			t.Errorf("pod %s runs on the cordoned node %s", name, nodeName)
		}
	}
	acked := load.finish(t)
	checkAll(t, c, before)
	// Each eviction of a primary hands its shard over; writes acknowledged
	// in those moments are the documented loss of a failover.
	rest := acked
	lost := 0
	for _, at := range evictedAt {
		var inside map[string]string
		inside, rest = load.splitByAckTime(rest, at.Add(-time.Second), at.Add(10*time.Second))
		lost += countLost(c, inside)
	}
	checkAll(t, c, rest)
	t.Logf("%d evictions; writes acknowledged around them and lost: %d", len(evictedAt), lost)
}

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
