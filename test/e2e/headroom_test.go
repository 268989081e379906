package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	"k8s.io/apimachinery/pkg/api/meta"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A scale-in whose remaining primaries could not hold the data they would
// receive does not start: three shards of 64 MiB each hold about 120 MiB,
// more than 90% of what two would have. The cluster says why with the
// figures, moves no slot, and settles again once the shard count is put
// back; every key is kept.
func TestScaleInHeldWithoutMemoryHeadroom(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "headroom", "cache", 3, 0)
	c := clusterClient(t, seedOf(key), nil)
	data := fill(t, c, "fill", 30000, 4096)
	slots := map[string]int32{}
	for _, sh := range getCluster(t, key).Status.ShardStatuses {
		slots[sh.Primary] = sh.SlotCount
	}

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 2 })
	eventually(t, time.Minute, "scale-in held for memory", func() error {
		vc := getCluster(t, key)
		p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing)
		if p == nil || p.Reason != valkeyv1.ReasonInsufficientMemory {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		if !strings.Contains(p.Message, "remaining primaries would hold") || !strings.Contains(p.Message, "MiB of maxmemory") {
			return fmt.Errorf("message %q does not name the figures", p.Message)
		}
		return nil
	})
	assertEvent(t, key, valkeyv1.ReasonInsufficientMemory, "the 2 remaining primaries would hold")
	for _, sh := range getCluster(t, key).Status.ShardStatuses {
		if sh.SlotCount != slots[sh.Primary] {
			t.Fatalf("slots moved while held: %s has %d, had %d", sh.Primary, sh.SlotCount, slots[sh.Primary])
		}
	}

	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
	waitConverged(t, key, 3, 0, 2*time.Minute)
	checkKeys(t, c, data)
}

// fill writes n keys of size bytes each, pipelined.
func fill(t testing.TB, c valkey.Client, prefix string, n, size int) map[string]string {
	t.Helper()
	value := strings.Repeat("x", size)
	out := make(map[string]string, n)
	for start := 0; start < n; start += 1000 {
		var cmds valkey.Commands
		for i := start; i < min(start+1000, n); i++ {
			k := fmt.Sprintf("%s:%d", prefix, i)
			out[k] = value
			cmds = append(cmds, c.B().Set().Key(k).Value(value).Build())
		}
		for _, r := range c.DoMulti(context.Background(), cmds...) {
			if err := r.Error(); err != nil {
				t.Fatalf("filling: %v", err)
			}
		}
	}
	return out
}
