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
)

// A one-shard cluster whose pods have a CPU limit of 100m is driven by
// valkey-benchmark until its primary's process CPU, measured by Valkey
// itself (INFO cpu), crosses scaleOut.cpuPercent of the limit: the
// autoscaler adds a shard, says why, and every key written before is
// readable after the resharding. At rest the same node stays far below
// the threshold, so nothing scales before the load.
// Not parallel: the benchmark takes a core, which would slow the others.
func TestAutoscalingOnCPU(t *testing.T) {
	const ns = "autoscale-cpu"
	ctx := context.Background()
	createNamespace(t, ns)
	cfg := createConfig(t, "cpu-"+ns, "8.0.1", valkeyv1.ValkeyConfigSpec{Resources: &valkeyv1.Resources{CPU: "100m"},
		Valkey: map[string]string{"maxmemory": "64mb"}})
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1, ReplicasPerShard: 0,
			Autoscaling: &valkeyv1.Autoscaling{
				MinShards: 1, MaxShards: 2,
				ScaleOut:                valkeyv1.ScaleOutTriggers{CPUPercent: ptr.To(50.0)},
				ScaleOutCooldownSeconds: ptr.To[int32](0),
			}},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	key := client.ObjectKeyFromObject(vc)
	waitConverged(t, key, 1, 0, 5*time.Minute)
	primary := getCluster(t, key).Status.ShardStatuses[0].Primary

	// At rest: CPU measured against the 100m limit, well below 50%.
	var idle float64
	eventually(t, 30*time.Second, "an idle CPU sample", func() error {
		s, err := latestSample(ns, primary)
		if err != nil {
			return err
		}
		if s.CPUPercent == nil {
			return fmt.Errorf("sample without cpuPercent: %+v", s)
		}
		idle = *s.CPUPercent
		return nil
	})
	if idle >= 50 {
		t.Fatalf("idle cpuPercent %.1f: the node would scale with no load", idle)
	}
	c := clusterClient(t, seedOf(key), nil)
	kept := writeKeys(t, c, "kept", 500)

	pod := clusterPods(t, key)[primary]
	bctx, stop := context.WithCancel(ctx)
	defer stop()
	bench := exec.CommandContext(bctx, "valkey-benchmark", "-h", pod.Status.PodIP, "-p", "6379",
		"-t", "set,get", "-n", "100000000", "-c", "8", "-P", "8", "-r", "10000", "-q")
	if err := bench.Start(); err != nil {
		t.Fatalf("starting valkey-benchmark: %v", err)
	}
	defer func() { stop(); _ = bench.Wait() }()
	start := time.Now()
	eventually(t, time.Minute, "a ScaleOut decision on CPU", func() error {
		a := getCluster(t, key).Status.Autoscaling
		if a == nil || a.DesiredShards != 2 || a.LastDecision != "ScaleOut" {
			return fmt.Errorf("status.autoscaling %+v", a)
		}
		want := "1 -> 2 shards: node " + primary + " cpu "
		if !strings.HasPrefix(a.LastDecisionMessage, want) || !strings.HasSuffix(a.LastDecisionMessage, "% >= 50%") {
			return fmt.Errorf("last decision %q, want %q...%% >= 50%%", a.LastDecisionMessage, want)
		}
		return nil
	})
	t.Logf("idle cpuPercent %.1f; scale-out on CPU decided %s into the load: %s", idle, time.Since(start).Round(time.Second),
		getCluster(t, key).Status.Autoscaling.LastDecisionMessage)
	stop()
	_ = bench.Wait()
	assertEvent(t, key, "ScaleOut", "1 -> 2 shards: node "+primary+" cpu ")
	waitConverged(t, key, 2, 0, 3*time.Minute)
	checkAll(t, c, kept)
	assertKeysOnEveryShard(t, c, 2)
}
