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

// BenchmarkBootstrap measures, per shape, the time from creating a
// ValkeyCluster (what `kubectl apply` does) to Active, and how many
// reconciles the operator ran on the way.
func BenchmarkBootstrap(b *testing.B) {
	for _, s := range []struct{ shards, replicas int }{{1, 0}, {3, 1}, {4, 2}, {8, 1}, {16, 1}, {32, 0}} {
		shape := fmt.Sprintf("%dx%d", s.shards, s.replicas)
		b.Run(shape, func(b *testing.B) {
			var total time.Duration
			var reconciles, all int
			for range b.N {
				ns := benchNamespace("bench-boot-" + shape)
				createNamespace(b, ns)
				cfg := createMenu(b, ns)
				vc := &valkeyv1.ValkeyCluster{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "boot"},
					Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: int32(s.shards), ReplicasPerShard: int32(s.replicas)},
				}
				cluster0, all0 := reconcileCounter()
				start := time.Now()
				if err := k8sClient.Create(b.Context(), vc); err != nil {
					b.Fatal(err)
				}
				waitActive(b, client.ObjectKeyFromObject(vc), s.shards, s.replicas, 5*time.Minute)
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
			saveRecord(b, "bootstrap-"+shape, record.File{Bootstrap: &record.Bootstrap{
				Shards: s.shards, Replicas: s.replicas, Seconds: mean.Seconds(),
				Reconciles: reconciles / n, AllReconciles: all / n,
			}})
		})
	}
}
