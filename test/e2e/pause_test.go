package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A paused cluster holds a shards edit: the planner sees it and says what it
// will do, creates nothing, and converges once the annotation is removed,
// every key intact.
func TestPausedClusterHoldsShardsEdit(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "paused", "cache", 1, 0)
	c := clusterClient(t, seedOf(key), nil)
	data := writeKeys(t, c, "held", 1000)

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) {
		if vc.Annotations == nil {
			vc.Annotations = map[string]string{}
		}
		vc.Annotations[valkeyv1.AnnotationPaused] = "true"
	})
	eventually(t, 30*time.Second, "Paused condition", func() error {
		vc := getCluster(t, key)
		if !meta.IsStatusConditionTrue(vc.Status.Conditions, "Paused") {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})
	assertEvent(t, key, "Paused", valkeyv1.AnnotationPaused)

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 2 })
	// The edit reaches the planner, which holds its first action and says so.
	eventually(t, 30*time.Second, "the held wave in Progressing", func() error {
		vc := getCluster(t, key)
		p := meta.FindStatusCondition(vc.Status.Conditions, "Progressing")
		if p == nil || p.Reason != "Paused" || !strings.Contains(p.Message, "adding shard") {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})
	var nodes valkeyv1.ValkeyNodeList
	if err := k8sClient.List(context.Background(), &nodes, client.InNamespace(key.Namespace)); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 {
		t.Fatalf("a paused cluster has %d nodes, want its 1", len(nodes.Items))
	}

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { delete(vc.Annotations, valkeyv1.AnnotationPaused) })
	waitConverged(t, key, 2, 0, 4*time.Minute)
	assertEvent(t, key, "Resumed", valkeyv1.AnnotationPaused)
	checkAll(t, c, data)
}
