package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/render"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// Every pod of a cluster deleted at once, as `kubectl delete pods -l
// app.kubernetes.io/instance=<cluster>` does it, with and without
// replicas. Storage is emptyDir, so no copy of any key survives: the
// documented outcome is that every key is gone, that the operator reports
// it (a Warning Event PrimaryLostNoReplica per shard naming the shard's
// primary and slot ranges, the condition DataLost True naming one of them)
// and that it rebuilds an empty cluster of the asked shape which takes
// writes again. It must never claim nothing was lost.
func TestChaosAllPodsDeleted(t *testing.T) {
	t.Parallel()
	for _, replicas := range []int{0, 1} {
		t.Run(fmt.Sprintf("2x%d", replicas), func(t *testing.T) {
			t.Parallel()
			key := newPlainCluster(t, fmt.Sprintf("chaos-allpods-%d", replicas), "cache", 2, replicas)
			c := clusterClient(t, seedOf(key), nil)
			before := writeKeys(t, c, "before", 2000)

			vc := getCluster(t, key)
			lost := map[string][]vk.SlotRange{}
			for _, sh := range vc.Status.ShardStatuses {
				lost[sh.Primary] = podMyself(t, key.Namespace, sh.Primary).Slots
			}
			old := vc.Status.Nodes
			truth := watchTruth(t, key)
			start := time.Now()
			if err := k8sClient.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(key.Namespace),
				client.MatchingLabels(render.ClusterSelector(key.Name))); err != nil {
				t.Fatalf("deleting every pod of %s: %v", key, err)
			}
			eventually(t, 2*time.Minute, "every old member gone from the status", func() error {
				vc := getCluster(t, key)
				for _, n := range old {
					for _, m := range vc.Status.Nodes {
						if n == m {
							return fmt.Errorf("%s still a member; state %s, conditions %v", n, vc.Status.State, conditionSummary(vc))
						}
					}
				}
				return nil
			})
			vc = waitConverged(t, key, 2, replicas, 5*time.Minute)
			t.Logf("every pod deleted: Active again with %d new nodes after %s", len(vc.Status.Nodes), time.Since(start).Round(time.Second))
			longest, what := truth.stop()
			t.Logf("longest time the status claimed a healthy cluster while it was broken: %s (%s)", longest.Round(100*time.Millisecond), what)
			if longest > 5*time.Second {
				t.Errorf("the status claimed a healthy cluster for %s while it was broken: %s", longest.Round(100*time.Millisecond), what)
			}

			for name, slots := range lost {
				assertDataLossEvent(t, key, name, slots)
				if n := countEvents(t, key, "PrimaryLostNoReplica", name); n != 1 {
					t.Errorf("the loss of %s was reported %d times, want once", name, n)
				}
			}
			assertDataLostNamesOneOf(t, key, lost)

			// Every key is gone: the documented cost of emptyDir storage.
			ctx := context.Background()
			kept := 0
			for k := range before {
				err := c.Do(ctx, c.B().Get().Key(k).Build()).Error()
				switch {
				case valkey.IsValkeyNil(err):
				case err == nil:
					kept++
				default:
					t.Fatalf("GET %s after the rebuild: %v", k, err)
				}
			}
			if kept != 0 {
				t.Fatalf("%d of %d keys survived the deletion of every pod: storage is emptyDir, none should", kept, len(before))
			}
			after := writeKeys(t, c, "after", 2000)
			checkAll(t, c, after)
			assertKeysOnEveryShard(t, c, 2)
		})
	}
}

// assertDataLostNamesOneOf checks that the DataLost condition is True with
// reason PrimaryLostNoReplica and names one of the lost primaries with its
// slots: it records the latest loss only.
func assertDataLostNamesOneOf(t testing.TB, key client.ObjectKey, lost map[string][]vk.SlotRange) {
	t.Helper()
	eventually(t, 30*time.Second, "DataLost naming a lost primary", func() error {
		vc := getCluster(t, key)
		for _, c := range vc.Status.Conditions {
			if c.Type != "DataLost" {
				continue
			}
			if c.Status != metav1.ConditionTrue || c.Reason != "PrimaryLostNoReplica" {
				return fmt.Errorf("DataLost = %s %s %q", c.Status, c.Reason, c.Message)
			}
			for name, slots := range lost {
				if strings.Contains(c.Message, name) && strings.Contains(c.Message, slotsNote(slots)) {
					return nil
				}
			}
			return fmt.Errorf("DataLost %q names none of the lost primaries with its slots", c.Message)
		}
		return fmt.Errorf("no DataLost condition; conditions %v", conditionSummary(vc))
	})
}
