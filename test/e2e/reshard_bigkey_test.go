package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// A key larger than a move can carry is reported, not silently stuck. A
// Valkey 8 node refuses a request argument above its proto-max-bulk-len,
// so a list whose elements add up past that limit cannot travel by MIGRATE
// (one RESTORE-ASKING argument holds the whole serialized key) to a node
// with the same limit. The scale-out stops at that key's batch with
// ActionFailed naming the key; nothing is lost and the cluster keeps
// serving it; once the config is fixed (a live setting, set on the
// running nodes in place) the move completes by itself.
func TestOversizedKeyIsReported(t *testing.T) {
	t.Parallel()
	const ns = "reshard-bigkey"
	createNamespace(t, ns)
	cfg := createConfig(t, "bigkey", "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"proto-max-bulk-len": "1mb"}})
	key := newClusterWith(t, ns, "cache", cfg, 1, 0)
	c := clusterClient(t, seedOf(key), nil)
	small := writeKeys(t, c, "small", 1000)

	// In the top batch, the first the new shard takes.
	big := ""
	for i := 0; big == ""; i++ {
		if k := fmt.Sprintf("big-%d", i); vk.KeySlot(k) >= vk.MaxSlot-100 {
			big = k
		}
	}
	// Random, so that DUMP's compression cannot shrink the key under
	// the limit.
	raw := make([]byte, 512<<10)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	chunk := string(raw)
	for range 4 {
		if err := c.Do(context.Background(), c.B().Rpush().Key(big).Element(chunk).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	readBig := func() {
		t.Helper()
		got, err := c.Do(context.Background(), c.B().Llen().Key(big).Build()).AsInt64()
		if err != nil || got != 4 {
			t.Fatalf("LLEN %s = %d, %v; want 4", big, got, err)
		}
	}

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 2 })
	eventually(t, 3*time.Minute, "the move reported stuck on "+big, func() error {
		p := meta.FindStatusCondition(getCluster(t, key).Status.Conditions, valkeyv1.CondProgressing)
		if p == nil || p.Reason != valkeyv1.ReasonActionFailed || !strings.Contains(p.Message, big) {
			return fmt.Errorf("Progressing: %+v", p)
		}
		t.Logf("Progressing %s: %.400s", p.Reason, p.Message)
		return nil
	})
	readBig()
	checkKeys(t, c, small)

	// proto-max-bulk-len is a live setting: the fixed config reaches the
	// running nodes in place (a hand CONFIG SET would be put back as
	// drift).
	eventually(t, 30*time.Second, "raising proto-max-bulk-len in the config", func() error {
		var c valkeyv1.ValkeyConfig
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: cfg}, &c); err != nil {
			return err
		}
		c.Spec.Valkey["proto-max-bulk-len"] = "8mb"
		return k8sClient.Update(context.Background(), &c)
	})
	vc := waitConverged(t, key, 2, 0, 5*time.Minute)
	assertEvenSlots(t, ns, vc, 2)
	readBig()
	checkKeys(t, c, small)
}
