package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
)

// BenchmarkAutoscaleReaction times a scale-out on real load, from the
// threshold crossed to the decision, to the new shard owning slots and to
// Active, once on memory and once on CPU. Run once: use -benchtime 1x.
func BenchmarkAutoscaleReaction(b *testing.B) {
	for _, trigger := range []string{"memory", "cpu"} {
		b.Run(trigger, func(b *testing.B) {
			ctx := context.Background()
			ns := benchNamespace("bench-autoscale-" + trigger)
			createNamespace(b, ns)
			img := &valkeyv1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: "valkey-8-" + ns},
				Spec: valkeyv1.ValkeyImageSpec{Repository: "valkey/valkey", Tag: "8.0.1", Version: "8.0.1"}}
			cfg := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: "scaled-" + ns},
				Spec: valkeyv1.ValkeyConfigSpec{ImageRef: img.Name, Valkey: map[string]string{"maxmemory": "16mb"}}}
			triggers := valkeyv1.ScaleOutTriggers{MemoryPercent: ptr.To(50.0)}
			if trigger == "cpu" {
				cfg.Spec.Valkey["maxmemory"] = "64mb"
				cfg.Spec.Resources = &valkeyv1.Resources{CPU: "100m"}
				triggers = valkeyv1.ScaleOutTriggers{CPUPercent: ptr.To(50.0)}
			}
			vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
				Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfg.Name, Shards: 1, Autoscaling: &valkeyv1.Autoscaling{
					MinShards: 1, MaxShards: 2, ScaleOut: triggers, ScaleOutCooldownSeconds: ptr.To[int32](0)}}}
			for _, o := range []client.Object{img, cfg, vc} {
				if err := k8sClient.Create(ctx, o); err != nil {
					b.Fatalf("creating %s: %v", o.GetName(), err)
				}
			}
			key := client.ObjectKeyFromObject(vc)
			waitConverged(b, key, 1, 0, 3*time.Minute)
			c := clusterClient(b, seedOf(key), nil)

			var start time.Time
			if trigger == "memory" {
				writeBulk(b, c, "bulk", 8000, 1024) // about 9 MB of 16
				start = time.Now()
			} else {
				pod := clusterPods(b, key)[getCluster(b, key).Status.ShardStatuses[0].Primary]
				bctx, stop := context.WithCancel(ctx)
				defer stop()
				bench := exec.CommandContext(bctx, "valkey-benchmark", "-h", pod.Status.PodIP, "-p", "6379",
					"-t", "set,get", "-n", "100000000", "-c", "8", "-P", "8", "-r", "10000", "-q")
				if err := bench.Start(); err != nil {
					b.Fatalf("starting valkey-benchmark: %v", err)
				}
				defer func() { stop(); _ = bench.Wait() }()
				start = time.Now()
			}
			var decided, slots time.Duration
			eventually(b, 2*time.Minute, "the new shard owning slots", func() error {
				got := getCluster(b, key)
				if a := got.Status.Autoscaling; decided == 0 && a != nil && a.DesiredShards == 2 {
					decided = time.Since(start)
				}
				if decided == 0 || got.Status.Shards < 2 {
					return fmt.Errorf("decided after %s, %d slot-holding shards", decided, got.Status.Shards)
				}
				slots = time.Since(start)
				return nil
			})
			waitConverged(b, key, 2, 0, 3*time.Minute)
			active := time.Since(start)
			b.Logf("%s: decision %s, new shard owns slots %s, Active %s after the threshold (sampling every %s)",
				trigger, decided.Round(10*time.Millisecond), slots.Round(10*time.Millisecond), active.Round(10*time.Millisecond), testSampleInterval)
			b.ReportMetric(decided.Seconds(), "s-to-decision")
			b.ReportMetric(slots.Seconds(), "s-to-slots")
			saveRecord(b, "autoscale-"+trigger, record.File{Autoscale: &record.Autoscale{
				Trigger: trigger, Cluster: "1x0 → 2x0", SampleIntervalSeconds: testSampleInterval.Seconds(),
				DecisionSeconds: decided.Seconds(), SlotsSeconds: slots.Seconds(), ActiveSeconds: active.Seconds(),
			}})
			deleteCluster(b, key)
		})
	}
}
