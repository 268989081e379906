package cluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// While the config cannot be rendered, a new node copies the newest member
// that stays: not one on its way out, whose spec may be the one a roll is
// replacing.
func TestLastGoodSpecs(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(name, image string, age time.Duration, life valkeyv1.NodeLifecycle) *valkeyv1.ValkeyNode {
		n := &valkeyv1.ValkeyNode{}
		n.Name, n.CreationTimestamp = name, metav1.NewTime(at.Add(-age))
		n.Spec = valkeyv1.ValkeyNodeSpec{Image: image, ShardIndex: 0, Lifecycle: life}
		return n
	}
	deleting := node("d", "deleting:1", 0, valkeyv1.LifecycleActive)
	deleting.DeletionTimestamp = &metav1.Time{Time: at}
	nodes := map[string]*valkeyv1.ValkeyNode{
		"a": node("a", "old:1", 2*time.Hour, valkeyv1.LifecycleActive),
		"b": node("b", "new:2", time.Hour, valkeyv1.LifecycleActive),
		"c": node("c", "leaving:1", 0, valkeyv1.LifecycleLeaving),
		"d": deleting,
	}
	desired, ok := lastGoodSpecs(nodes)
	if !ok {
		t.Fatal("no rendering kept from three members")
	}
	spec, err := desired(3)
	if err != nil || spec.Image != "new:2" || spec.ShardIndex != 3 || spec.Lifecycle != valkeyv1.LifecycleJoining {
		t.Fatalf("spec %+v, %v; want the newest staying member's image new:2, shard 3, Joining", spec, err)
	}
	if nodes["b"].Spec.ShardIndex != 0 {
		t.Fatal("the member's own spec was changed")
	}
	if _, ok := lastGoodSpecs(map[string]*valkeyv1.ValkeyNode{"c": nodes["c"], "d": deleting}); ok {
		t.Fatal("a rendering kept from members that are all leaving")
	}
}
