package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A ValkeyConfig edit with a value the server refuses, on a running
// cluster: the roll starts with a replacement node, which cannot start, so
// no running node is touched. The cluster keeps serving every key, the
// status names the server's own complaint and does not claim Active, and
// once the value is fixed every node runs it.
func TestBadConfigEditLeavesClusterServing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := newPlainCluster(t, "bad-config", "cache", 1, 1)
	vc := getCluster(t, key)
	original := slices.Clone(vc.Status.Nodes)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 1000)
	load := startLoad(c, "load")

	editConfig := func(set func(map[string]string)) {
		eventually(t, 30*time.Second, "editing "+vc.Spec.ConfigRef, func() error {
			var cfg valkeyv1.ValkeyConfig
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: vc.Spec.ConfigRef}, &cfg); err != nil {
				return err
			}
			set(cfg.Spec.Valkey)
			return k8sClient.Update(ctx, &cfg)
		})
	}
	editConfig(func(m map[string]string) { m["maxmemory-policy"] = refusedPolicy })

	assertWarning(t, key, valkeyv1.ReasonContainerExited, "exited with code 1")
	eventually(t, time.Minute, "ContainersHealthy False and the state not Active", func() error {
		got := getCluster(t, key)
		if cond := condition(got, valkeyv1.CondContainersHealthy); cond == nil || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("ContainersHealthy = %+v", cond)
		}
		if got.Status.State == valkeyv1.StateActive {
			return fmt.Errorf("state %s while a replacement cannot start", got.Status.State)
		}
		return nil
	})
	got := getCluster(t, key)
	for _, n := range original {
		if !slices.Contains(got.Status.Nodes, n) {
			t.Errorf("node %s left the cluster because of a value no node can run; members %v", n, got.Status.Nodes)
		}
		if p := clusterPods(t, key)[n]; p == nil || !p.DeletionTimestamp.IsZero() {
			t.Errorf("pod of %s deleted or going: %+v", n, p)
		}
	}
	checkAll(t, c, before)

	// maxmemory-policy is a live setting: the fixed value is set on the
	// running nodes in place, and the node that could not start goes.
	editConfig(func(m map[string]string) { m["maxmemory-policy"] = "allkeys-lru" })
	eventually(t, 5*time.Minute, "every node running the fixed value", func() error {
		got := waitConverged(t, key, 1, 1, 5*time.Minute)
		for _, name := range got.Status.Nodes {
			n, err := dialPod(key.Namespace, name)
			if err != nil {
				return err
			}
			v, err := n.ConfigGet(ctx, "maxmemory-policy")
			n.Close()
			if err != nil {
				return err
			}
			if v["maxmemory-policy"] != "allkeys-lru" {
				return fmt.Errorf("node %s runs maxmemory-policy %q", name, v["maxmemory-policy"])
			}
		}
		return nil
	})
	acked := load.finish(t)
	checkAll(t, c, before)
	checkAll(t, c, acked)
}
