package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
)

// BenchmarkBootstrap measures, per Valkey version and shape, the time from
// creating a ValkeyCluster (what `kubectl apply` does) to Active, and how
// many reconciles the operator ran on the way.
func BenchmarkBootstrap(b *testing.B) {
	for _, version := range []string{"8.0.1", "9.1.2"} {
		for _, s := range []struct{ shards, replicas int }{{1, 0}, {3, 1}, {8, 1}, {16, 1}, {32, 0}} {
			b.Run(fmt.Sprintf("%dx%d-%s", s.shards, s.replicas, version), func(b *testing.B) {
				bootstrapOnce(b, version, s.shards, s.replicas)
			})
		}
	}
}

// bootstrapOnce creates the cluster b.N times, each on its own, and
// records the mean time to Active and the reconciles it took.
func bootstrapOnce(b *testing.B, version string, shards, replicas int) {
	shape := fmt.Sprintf("%dx%d", shards, replicas)
	var total time.Duration
	var reconciles, all int
	for range b.N {
		ns := benchNamespace("bench-boot-" + shape)
		createNamespace(b, ns)
		cfg := createConfig(b, ns, version, valkeyv1.ValkeyConfigSpec{})
		vc := &valkeyv1.ValkeyCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "boot"},
			Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: int32(shards), ReplicasPerShard: int32(replicas)},
		}
		cluster0, all0 := reconcileCounter()
		start := time.Now()
		if err := k8sClient.Create(b.Context(), vc); err != nil {
			b.Fatal(err)
		}
		waitActive(b, client.ObjectKeyFromObject(vc), shards, replicas, 5*time.Minute)
		total += time.Since(start)
		cluster1, all1 := reconcileCounter()
		reconciles += cluster1 - cluster0
		all += all1 - all0
		// The next shape gets the machine to itself.
		if err := k8sClient.Delete(b.Context(), vc); err != nil {
			b.Fatal(err)
		}
		waitGone(b, ns, vc.Name)
	}
	n := b.N
	mean := total / time.Duration(n)
	b.ReportMetric(float64(mean.Milliseconds()), "ms-to-Active/op")
	b.ReportMetric(float64(reconciles)/float64(n), "reconciles/op")
	saveRecord(b, "bootstrap-"+version+"-"+shape, record.File{Bootstrap: &record.Bootstrap{
		Version: version, Shards: shards, Replicas: replicas, Seconds: mean.Seconds(),
		Reconciles: reconciles / n, AllReconciles: all / n,
	}})
}
