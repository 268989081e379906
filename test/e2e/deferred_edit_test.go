package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A shards edit made while the cluster is Creating is deferred, not lost:
// bootstrap finishes the shape it started, then the edit is applied. The
// cluster runs Valkey 9, whose atomic slot migration moves the slots.
func TestShardsEditDuringCreatingIsApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := "deferred"
	createNamespace(t, ns)
	cfg := createConfig(t, "v9-deferred", "9.1.2", valkeyv1.ValkeyConfigSpec{})
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "grow"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 2, ReplicasPerShard: 0},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	key := client.ObjectKeyFromObject(vc)
	eventually(t, time.Minute, "bootstrap to start", func() error {
		got := getCluster(t, key)
		if got.Status.State != valkeyv1.StateCreating || got.Status.TargetSpec == nil {
			return errorf("state %q targetSpec %v", got.Status.State, got.Status.TargetSpec)
		}
		return nil
	})
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
	if ts := getCluster(t, key).Status.TargetSpec; ts != nil && ts.Shards != 2 {
		t.Fatalf("the edit changed the bootstrap target to %d shards", ts.Shards)
	}

	waitActive(t, key, 3, 0, 4*time.Minute)
	c := clusterClient(t, "grow.deferred.svc.cluster.local:6379", nil)
	data := writeKeys(t, c, "grow", 2000)
	checkKeys(t, c, data)
	assertKeysOnEveryShard(t, c, 3)
}
