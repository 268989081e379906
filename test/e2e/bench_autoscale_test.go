package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
)

// BenchmarkAutoscaleReaction times a scale-out on real load, from the
// threshold crossed to the decision, and from the decision to the new shard
// owning slots and to Active, once on memory and once on CPU. The operator
// runs at the shipped pacing (30 s sampling, 5-minute safety pass), as
// users get it. Run once: use -benchtime 1x.
func BenchmarkAutoscaleReaction(b *testing.B) {
	shippedPacingInstead(b)
	pacing := environmentOptions()
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
			// The decision waits for a sample that sees the load: the next
			// tick's, or the one after when the next answers with the look
			// the cluster controller took at convergence, before the load
			// (see the sample trail logged below).
			var seenAt time.Time
			var stamp *metav1.Time
			eventually(b, 3*pacing.SampleInterval+time.Minute, "the ScaleOut decision", func() error {
				got := getCluster(b, key)
				a := got.Status.Autoscaling
				if a == nil || a.DesiredShards != 2 {
					return fmt.Errorf("autoscaling status %+v", a)
				}
				seenAt, stamp = time.Now(), a.LastScaleOutTime
				return nil
			})
			decidedAt := decisionInstant(b, seenAt, stamp)
			b.Logf("%s: the samples the decision saw: %s", trigger, sampleTrail(b, key, start))
			eventually(b, 3*time.Minute, "the new shard owning slots", func() error {
				if n := getCluster(b, key).Status.Shards; n < 2 {
					return fmt.Errorf("%d slot-holding shards", n)
				}
				return nil
			})
			slotsAt := time.Now()
			waitConverged(b, key, 2, 0, 3*time.Minute)
			activeAt := time.Now()

			decision, seen := decidedAt.Sub(start), seenAt.Sub(start)
			slots, active := slotsAt.Sub(decidedAt), activeAt.Sub(decidedAt)
			ms := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
			b.Logf("%s (sampling every %s, safety pass every %s): threshold → decision %s (status stamp %s, seen by polling after %s)",
				trigger, pacing.SampleInterval, pacing.SafetyInterval, ms(decision), stampString(stamp), ms(seen))
			b.Logf("%s: decision → new shard owns slots %s, decision → Active %s (threshold → Active %s)",
				trigger, ms(slots), ms(active), ms(activeAt.Sub(start)))
			b.ReportMetric(decision.Seconds(), "s-to-decision")
			b.ReportMetric(slots.Seconds(), "s-decision-to-slots")
			b.ReportMetric(active.Seconds(), "s-decision-to-active")
			saveRecord(b, "autoscale-"+trigger, record.File{Autoscale: &record.Autoscale{
				Trigger: trigger, Cluster: "1x0 → 2x0",
				SampleIntervalSeconds: pacing.SampleInterval.Seconds(), SafetyIntervalSeconds: pacing.SafetyInterval.Seconds(),
				DecisionSeconds: decision.Seconds(), DecisionSeenSeconds: seen.Seconds(),
				SlotsSeconds: slotsAt.Sub(start).Seconds(), ActiveSeconds: activeAt.Sub(start).Seconds(),
				SlotsAfterDecisionSeconds: slots.Seconds(), ActiveAfterDecisionSeconds: active.Seconds(),
			}})
			deleteCluster(b, key)
		})
	}
}

// decisionInstant is when the autoscaler decided, given when polling first
// saw the decision and the autoscaler's own stamp of it
// (status.autoscaling.lastScaleOutTime). The API keeps the stamp to the
// second, so the decision lies in [stamp, stamp+1s) and no later than seen:
// the middle of what is left, within half a second of the truth. Without a
// usable stamp, it is when polling saw it.
func decisionInstant(t testing.TB, seen time.Time, stamp *metav1.Time) time.Time {
	t.Helper()
	if stamp == nil || stamp.After(seen) {
		t.Logf("no usable lastScaleOutTime (%s, seen at %s): the decision is timed by polling", stampString(stamp), seen.Format(time.RFC3339Nano))
		return seen
	}
	late := stamp.Add(time.Second)
	if seen.Before(late) {
		late = seen
	}
	return stamp.Add(late.Sub(stamp.Time) / 2)
}

func stampString(t *metav1.Time) string {
	if t == nil {
		return "none"
	}
	return t.Format(time.RFC3339)
}

// sampleTrail lists each node's kept utilisation samples as seconds from
// start (the API keeps their times to the second) with the figures the
// decision compares: what the decision waited for.
func sampleTrail(t testing.TB, key client.ObjectKey, start time.Time) string {
	t.Helper()
	var nodes valkeyv1.ValkeyNodeList
	if err := k8sClient.List(context.Background(), &nodes, client.InNamespace(key.Namespace), client.MatchingLabels{valkeyv1.LabelInstance: key.Name}); err != nil {
		t.Fatalf("listing nodes of %s: %v", key, err)
	}
	var out []string
	for _, n := range nodes.Items {
		var parts []string
		if u := n.Status.Utilisation; u != nil {
			for _, s := range u.Samples {
				part := fmt.Sprintf("%+.0fs", s.Time.Sub(start).Seconds())
				if s.MemoryPercent != nil {
					part += fmt.Sprintf(" mem %.1f%%", *s.MemoryPercent)
				}
				if s.CPUPercent != nil {
					part += fmt.Sprintf(" cpu %.1f%%", *s.CPUPercent)
				}
				parts = append(parts, part)
			}
		}
		out = append(out, fmt.Sprintf("%s (%s): %s", n.Name, n.Status.Role, strings.Join(parts, ", ")))
	}
	return strings.Join(out, "; ")
}
