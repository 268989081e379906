package cluster

import (
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// A wave creates nodes of several shards at once, each rendering its
// shard's spec through the one memory of the reconcile: rendering from
// many goroutines at once must be safe (unguarded, a run of the suite
// once stopped with "concurrent map writes") and give each shard its spec.
func TestNodeSpecsFromConcurrentActions(t *testing.T) {
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "cluster-uid"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: "cfg", Shards: 16},
	}
	res := &resolve.Result{Image: "valkey/valkey:8.0.1", Version: "8.0.1", CPU: "500m", Memory: "1Gi", Chain: []string{"cfg"}}
	for round := range 300 {
		desired := nodeSpecs(render.Cluster{Cluster: vc}, res)
		var wg sync.WaitGroup
		for i := range 64 {
			shard := int32(i % 16)
			wg.Add(1)
			go func() {
				defer wg.Done()
				spec, err := desired(shard)
				if err != nil {
					t.Errorf("round %d shard %d: %v", round, shard, err)
					return
				}
				if spec.ShardIndex != shard {
					t.Errorf("round %d: shard %d got the spec of shard %d", round, shard, spec.ShardIndex)
				}
			}()
		}
		wg.Wait()
	}
}
