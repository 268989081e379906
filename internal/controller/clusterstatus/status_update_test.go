package clusterstatus_test

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/testenv"
)

// countingReader counts the reads that go around the cache.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A report that changes nothing costs no read around the cache and no
// write; one that changes the status reads fresh and writes it.
func TestUpdateReadsFreshOnlyForAChange(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "status-update"}}); err != nil {
		t.Fatal(err)
	}
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "status-update"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: "cfg", Shards: 1},
	}
	if err := c.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc.Status.State = valkeyv1.StateActive
	if err := c.Status().Update(ctx, vc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(vc)
	report := func(message string) func(*valkeyv1.ValkeyCluster) bool {
		return func(vc *valkeyv1.ValkeyCluster) bool {
			clusterstatus.SetCondition(vc, valkeyv1.CondACLApplied, metav1.ConditionTrue, valkeyv1.ReasonACLCurrent, message)
			return true
		}
	}

	for _, step := range []struct {
		message   string
		wantFresh bool
	}{
		{message: "every node runs the file", wantFresh: true},
		{message: "every node runs the file", wantFresh: false},
		{message: "every node runs the new file", wantFresh: true},
	} {
		// The test's client stands for the cache: the cluster as it holds it.
		fresh := &countingReader{Reader: c}
		if err := clusterstatus.Update(ctx, c, fresh, key, report(step.message)); err != nil {
			t.Fatal(err)
		}
		if got := fresh.gets.Load() > 0; got != step.wantFresh {
			t.Errorf("report %q: read around the cache %d times, want a read: %v", step.message, fresh.gets.Load(), step.wantFresh)
		}
		var got valkeyv1.ValkeyCluster
		if err := c.Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		if cond := meta.FindStatusCondition(got.Status.Conditions, valkeyv1.CondACLApplied); cond == nil || cond.Message != step.message {
			t.Errorf("report %q: condition written = %+v", step.message, cond)
		}
	}
}
