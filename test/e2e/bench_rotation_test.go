package e2e

import (
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// BenchmarkTLSLeafRotation measures, for a 1x1 TLS cluster, the time from
// the Secret update to every node serving the new certificate to a new
// connection. Each b.N runs $VALKEY_BENCH_ROTATIONS rotations (default 3);
// the runtime's projection delay is the suite's, which
// $VALKEY_E2E_PROJECTION_DELAY sets.
func BenchmarkTLSLeafRotation(b *testing.B) {
	rotations := envInt("VALKEY_BENCH_ROTATIONS", 3)
	ca := testcerts.NewCA("bench-rotation-ca")
	f := newTLSCluster(b, benchNamespace("bench-rotation"), ca, 1, 1)
	f.waitServing(ca.CertPEM, f.leaf, time.Minute)
	var samples []float64
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		for range rotations {
			next := testcerts.Leaf(ca, f.name, f.ns, clusterDomain)
			start := time.Now()
			f.rotate(next, ca.CertPEM)
			took := f.waitServing(ca.CertPEM, next, 3*time.Minute).Sub(start)
			total += took
			samples = append(samples, took.Seconds())
		}
	}
	b.StopTimer()
	perRotation := total / time.Duration(len(samples))
	b.ReportMetric(float64(perRotation.Milliseconds()), "ms/rotation")
	b.ReportMetric(float64((perRotation - projectionDelay).Milliseconds()), "ms-beyond-projection/rotation")
	saveRecord(b, "rotation-delay-"+projectionDelay.String(), record.File{Rotation: &record.Rotation{
		ProjectionDelay:   projectionDelay.Seconds(),
		Nodes:             len(f.pods()),
		Seconds:           samples,
		TLSReloadInterval: controller.DefaultOptions().TLSReloadInterval.Seconds(),
	}})
}
