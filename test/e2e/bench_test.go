package e2e

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// BenchmarkTLSLeafRotation measures, per rotation of a 1x1 TLS cluster's
// leaf, the time from the Secret update to every node serving the new
// certificate, and reports it without the runtime's projection delay (the
// kubelet's share, not the operator's).
func BenchmarkTLSLeafRotation(b *testing.B) {
	ca := testcerts.NewCA("bench-rotation-ca")
	f := newTLSFixture(b, benchNamespace("bench-rotation"), ca)
	f.waitServing(ca.CertPEM, f.leaf, time.Minute)
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		next := testcerts.Leaf(ca, f.name, f.ns, clusterDomain)
		start := time.Now()
		f.rotate(next, ca.CertPEM)
		total += f.waitServing(ca.CertPEM, next, 2*time.Minute).Sub(start)
	}
	b.StopTimer()
	perRotation := total / time.Duration(b.N)
	b.ReportMetric(float64(perRotation.Milliseconds()), "ms/rotation")
	b.ReportMetric(float64((perRotation - projectionDelay).Milliseconds()), "ms-beyond-projection/rotation")
}

// BenchmarkBootstrap measures the time from creating a ValkeyCluster to
// Active, per shape.
func BenchmarkBootstrap(b *testing.B) {
	for _, s := range []struct{ shards, replicas int }{{1, 0}, {3, 1}, {4, 2}} {
		b.Run(fmt.Sprintf("%dx%d", s.shards, s.replicas), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				ns := benchNamespace(fmt.Sprintf("bench-boot-%dx%d", s.shards, s.replicas))
				createNamespace(b, ns)
				cfg := createMenu(b, ns)
				vc := &valkeyv1.ValkeyCluster{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "boot"},
					Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: int32(s.shards), ReplicasPerShard: int32(s.replicas)},
				}
				start := time.Now()
				if err := k8sClient.Create(b.Context(), vc); err != nil {
					b.Fatal(err)
				}
				waitActive(b, client.ObjectKeyFromObject(vc), s.shards, s.replicas, 5*time.Minute)
				total += time.Since(start)
				if err := k8sClient.Delete(b.Context(), vc); err != nil {
					b.Fatal(err)
				}
				waitGone(b, ns, vc.Name)
			}
			b.ReportMetric(float64((total / time.Duration(b.N)).Milliseconds()), "ms-to-Active/op")
		})
	}
}

// benchRuns numbers namespaces: the testing package calls a benchmark
// function several times while it settles on b.N.
var benchRuns atomic.Int32

func benchNamespace(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, benchRuns.Add(1))
}
