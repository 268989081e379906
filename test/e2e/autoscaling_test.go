package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A one-shard cluster with a small maxmemory is filled by real writes until
// its primary crosses scaleOut.memoryPercent: the autoscaler adds a shard
// (desiredShards, a ScaleOut Event saying why) and every acknowledged key
// survives the resharding. With the data deleted, every node's peak over
// the short window falls below scaleIn.memoryPercent and it scales back in,
// the kept keys intact.
func TestAutoscalingOnMemory(t *testing.T) {
	const ns = "autoscale"
	ctx := context.Background()
	createNamespace(t, ns)
	cfg := createConfig(t, "small-"+ns, "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "16mb"}})
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1, ReplicasPerShard: 0,
			Autoscaling: &valkeyv1.Autoscaling{
				MinShards: 1, MaxShards: 2,
				ScaleOut:                valkeyv1.ScaleOutTriggers{MemoryPercent: ptr.To(50.0)},
				ScaleIn:                 &valkeyv1.ScaleInTriggers{MemoryPercent: ptr.To(25.0)},
				ScaleInWindowSeconds:    30,
				ScaleOutCooldownSeconds: ptr.To[int32](0),
				ScaleInCooldownSeconds:  ptr.To[int32](0),
			}},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	key := client.ObjectKeyFromObject(vc)
	waitConverged(t, key, 1, 0, 5*time.Minute)

	// Sampling reaches the node's status, and the autoscaler owns the
	// shard count from the start.
	var primary string
	eventually(t, 30*time.Second, "a memory sample and desiredShards 1", func() error {
		got := getCluster(t, key)
		if a := got.Status.Autoscaling; a == nil || a.DesiredShards != 1 {
			return fmt.Errorf("status.autoscaling %+v", got.Status.Autoscaling)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, "Autoscaling"); c == nil || c.Reason != "AutoscalingActive" {
			return fmt.Errorf("conditions %v", conditionSummary(got))
		}
		primary = got.Status.ShardStatuses[0].Primary
		s, err := latestSample(key.Namespace, primary)
		if err != nil {
			return err
		}
		if s.MemoryPercent == nil || *s.MemoryPercent <= 0 || *s.MemoryPercent >= 50 || s.UsedMemoryBytes <= 0 {
			return fmt.Errorf("sample %+v", s)
		}
		return nil
	})

	c := clusterClient(t, seedOf(key), nil)
	kept := writeKeys(t, c, "kept", 200)
	// About 9 MB of values on a 16 MB maxmemory: well past 50%, short of
	// the limit, so every write is acknowledged.
	bulk := writeBulk(t, c, "bulk", 8000, 1024)
	t.Logf("wrote %d keys of 1 KiB", len(bulk))

	start := time.Now()
	eventually(t, time.Minute, "a ScaleOut decision", func() error {
		a := getCluster(t, key).Status.Autoscaling
		if a == nil || a.DesiredShards != 2 || a.LastDecision != "ScaleOut" {
			return fmt.Errorf("status.autoscaling %+v", a)
		}
		want := "1 -> 2 shards: node " + primary + " memory "
		if !strings.HasPrefix(a.LastDecisionMessage, want) || !strings.HasSuffix(a.LastDecisionMessage, "% >= 50%") {
			return fmt.Errorf("last decision %q, want %q...%% >= 50%%", a.LastDecisionMessage, want)
		}
		return nil
	})
	t.Logf("scale-out decided %s after the writes", time.Since(start).Round(time.Second))
	assertEvent(t, key, "ScaleOut", "1 -> 2 shards: node "+primary+" memory ")
	waitConverged(t, key, 2, 0, 3*time.Minute)
	t.Logf("2 shards Active %s after the writes", time.Since(start).Round(time.Second))
	checkAll(t, c, kept)
	checkAll(t, c, bulk)
	assertKeysOnEveryShard(t, c, 2)
	if a := getCluster(t, key).Status.Autoscaling; a.DesiredShards != 2 {
		t.Fatalf("desiredShards %d after converging, want 2 (maxShards)", a.DesiredShards)
	}

	deleteBulk(t, c, bulk)
	start = time.Now()
	eventually(t, 90*time.Second, "a ScaleIn decision", func() error {
		a := getCluster(t, key).Status.Autoscaling
		if a == nil || a.DesiredShards != 1 || a.LastDecision != "ScaleIn" {
			return fmt.Errorf("status.autoscaling %+v", a)
		}
		if !strings.HasPrefix(a.LastDecisionMessage, "2 -> 1 shards: every node's peak over 30s is below the scale-in thresholds") {
			return fmt.Errorf("last decision %q", a.LastDecisionMessage)
		}
		return nil
	})
	t.Logf("scale-in decided %s after the deletes", time.Since(start).Round(time.Second))
	assertEvent(t, key, "ScaleIn", "2 -> 1 shards: ")
	waitConverged(t, key, 1, 0, 3*time.Minute)
	checkAll(t, c, kept)
	if got := getCluster(t, key); got.Spec.Shards != 1 {
		t.Fatalf("spec.shards %d: the autoscaler must not write the spec", got.Spec.Shards)
	}
}

func latestSample(ns, node string) (valkeyv1.UtilisationSample, error) {
	var n valkeyv1.ValkeyNode
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: node}, &n); err != nil {
		return valkeyv1.UtilisationSample{}, err
	}
	u := n.Status.Utilisation
	if u == nil || len(u.Samples) == 0 {
		return valkeyv1.UtilisationSample{}, fmt.Errorf("node %s has no sample", node)
	}
	return u.Samples[len(u.Samples)-1], nil
}

// writeBulk writes n keys of size bytes each, pipelined, and returns those
// acknowledged; any refusal fails the test.
func writeBulk(t testing.TB, c valkey.Client, prefix string, n, size int) map[string]string {
	t.Helper()
	ctx := context.Background()
	want := make(map[string]string, n)
	const batch = 500
	for i := 0; i < n; i += batch {
		var cmds valkey.Commands
		var keys []string
		for j := i; j < min(n, i+batch); j++ {
			k := fmt.Sprintf("%s:%d", prefix, j)
			v := fmt.Sprintf("%d-", j) + strings.Repeat("x", size)
			want[k] = v[:size]
			keys = append(keys, k)
			cmds = append(cmds, c.B().Set().Key(k).Value(v[:size]).Build())
		}
		for j, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatalf("SET %s: %v", keys[j], err)
			}
		}
	}
	return want
}

func deleteBulk(t testing.TB, c valkey.Client, keys map[string]string) {
	t.Helper()
	ctx := context.Background()
	var cmds valkey.Commands
	for k := range keys {
		cmds = append(cmds, c.B().Del().Key(k).Build())
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("DEL: %v", err)
		}
	}
}
