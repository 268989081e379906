package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// The load runs this long before each disruption and after it converges,
// so the report shows the steady state on both sides of it.
const (
	loadLead = 2 * time.Second
	loadTail = 2 * time.Second
)

// availabilityScenarios orders the report.
var availabilityScenarios = []string{"leaf rotation", "CA rotation", "scale-out", "scale-in", "rolling upgrade", "primary kill", "primary kill, plain valkey-server",
	"primary pod deleted, 8.0.1", "primary pod evicted, 8.0.1", "primary's node drained, 8.0.1",
	"primary pod deleted, 9.1.2", "primary pod evicted, 9.1.2", "primary's node drained, 9.1.2"}

// BenchmarkAvailabilityTLS keeps a steady client load on a 3x1 TLS cluster
// through a leaf rotation and a CA rotation (both CAs bundled, then the
// new one alone, as the TLS page says). Each disruption is one
// sub-benchmark on the same cluster, run once: use -benchtime 1x.
func BenchmarkAvailabilityTLS(b *testing.B) {
	oldCA, newCA := testcerts.NewCA("bench-avail-old-ca"), testcerts.NewCA("bench-avail-new-ca")
	f := newTLSCluster(b, benchNamespace("bench-avail-tls"), oldCA, 3, 1)
	both := testcerts.Bundle(oldCA, newCA)
	// Clients trust both CAs for the length of the rotation, as they must.
	c := clusterClient(b, f.service(), both)
	const shape = "3x1 TLS"

	runDisruption(b, c, "leaf rotation", shape, func(b *testing.B) {
		next := testcerts.Leaf(oldCA, f.name, f.ns, clusterDomain)
		f.rotate(next, oldCA.CertPEM)
		f.waitServing(oldCA.CertPEM, next, 3*time.Minute)
	})
	runDisruption(b, c, "CA rotation", shape, func(b *testing.B) {
		next := testcerts.Leaf(newCA, f.name, f.ns, clusterDomain)
		f.rotate(next, both)
		f.waitServing(both, next, 3*time.Minute)
		f.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent, "", time.Minute)
		reloaded, nodes := f.reloads("success"), float64(len(f.pods()))
		f.rotate(next, newCA.CertPEM)
		eventually(b, 3*time.Minute, "every node to reload the new CA alone", func() error {
			if n := f.reloads("success") - reloaded; n < nodes {
				return fmt.Errorf("%v of %v nodes reloaded", n, nodes)
			}
			return nil
		})
	})
	deleteCluster(b, f.key)
}

// BenchmarkAvailabilityTopology keeps a steady client load on a 3x1
// plaintext cluster through scale-out to 4 shards, scale-in back to 3, a
// rolling upgrade from Valkey 8.0.1 to 9.1.2 and the kill of a primary,
// each a sub-benchmark on the same cluster, run once: use -benchtime 1x.
func BenchmarkAvailabilityTopology(b *testing.B) {
	ns := benchNamespace("bench-avail")
	key := newPlainCluster(b, ns, "cache", 3, 1)
	c := clusterClient(b, seedOf(key), nil)

	runDisruption(b, c, "scale-out", "3x1 → 4x1", func(b *testing.B) {
		updateCluster(b, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 4 })
		waitConverged(b, key, 4, 1, 5*time.Minute)
	})
	runDisruption(b, c, "scale-in", "4x1 → 3x1", func(b *testing.B) {
		updateCluster(b, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
		waitConverged(b, key, 3, 1, 5*time.Minute)
	})
	runDisruption(b, c, "rolling upgrade", "3x1, 8.0.1 → 9.1.2", func(b *testing.B) {
		old := slices.Clone(getCluster(b, key).Status.Nodes)
		var img valkeyv1.ValkeyImage
		eventually(b, 30*time.Second, "editing the image", func() error {
			if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: menuImageName(ns)}, &img); err != nil {
				return err
			}
			img.Spec.Tag, img.Spec.Version = "9.1.2", "9.1.2"
			return k8sClient.Update(context.Background(), &img)
		})
		eventually(b, 8*time.Minute, "every node replaced", func() error {
			for _, n := range getCluster(b, key).Status.Nodes {
				if slices.Contains(old, n) {
					return fmt.Errorf("%s not replaced yet", n)
				}
			}
			return nil
		})
		waitConverged(b, key, 3, 1, 5*time.Minute)
	})
	runDisruption(b, c, "primary kill", "3x1", func(b *testing.B) {
		lost := getCluster(b, key).Status.ShardStatuses[0].Primary
		fail(b, ns, lost, processKilled)
		waitReplaced(b, key, lost, 3, 1)
	})
	deleteCluster(b, key)
}

// BenchmarkAvailabilityPlanned keeps a steady client load on a 3x1
// plaintext cluster, on Valkey 8.0.1 and on 9.1.2, through the planned
// disruptions of a primary: its pod deleted, its pod evicted, and its
// Kubernetes node drained (cordoned, every Valkey pod on it evicted through
// the budgets). Each is one sub-benchmark, run once: use -benchtime 1x.
func BenchmarkAvailabilityPlanned(b *testing.B) {
	for _, version := range []string{"8.0.1", "9.1.2"} {
		ns := benchNamespace("bench-planned-" + strings.ReplaceAll(version, ".", ""))
		createNamespace(b, ns)
		vc := &valkeyv1.ValkeyCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
			Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: createACLMenu(b, ns, version), Shards: 3, ReplicasPerShard: 1},
		}
		if err := k8sClient.Create(context.Background(), vc); err != nil {
			b.Fatal(err)
		}
		key := client.ObjectKeyFromObject(vc)
		waitConverged(b, key, 3, 1, 5*time.Minute)
		c := clusterClient(b, seedOf(key), nil)
		shape := "3x1, " + version
		primaryPod := func() *corev1.Pod {
			name := getCluster(b, key).Status.ShardStatuses[0].Primary
			p := clusterPods(b, key)[name]
			if p == nil {
				b.Fatalf("primary %s has no pod", name)
			}
			return p
		}
		runDisruption(b, c, "primary pod deleted, "+version, shape, func(b *testing.B) {
			p := primaryPod()
			if err := k8sClient.Delete(context.Background(), p); err != nil {
				b.Fatal(err)
			}
			waitReplaced(b, key, p.Name, 3, 1)
		})
		runDisruption(b, c, "primary pod evicted, "+version, shape, func(b *testing.B) {
			p := primaryPod()
			evictRetrying(b, p)
			waitReplaced(b, key, p.Name, 3, 1)
		})
		runDisruption(b, c, "primary's node drained, "+version, shape, func(b *testing.B) {
			node := primaryPod().Spec.NodeName
			setUnschedulable(b, node, true)
			defer setUnschedulable(b, node, false)
			var evicted []string
			eventually(b, 5*time.Minute, "every Valkey pod evicted from "+node, func() error {
				var left []string
				for _, p := range clusterPods(b, key) {
					if p.Spec.NodeName != node {
						continue
					}
					left = append(left, p.Name)
					if !p.DeletionTimestamp.IsZero() {
						continue
					}
					switch err := evict(p); {
					case err == nil:
						evicted = append(evicted, p.Name)
					case apierrors.IsTooManyRequests(err), apierrors.IsNotFound(err):
					default:
						return err
					}
				}
				if len(left) > 0 {
					return fmt.Errorf("%d pods left on %s", len(left), node)
				}
				return nil
			})
			for _, name := range evicted {
				waitReplaced(b, key, name, 3, 1)
			}
		})
		deleteCluster(b, key)
	}
}

func evict(p *corev1.Pod) error {
	return k8sClient.SubResource("eviction").Create(context.Background(), p, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
	})
}

// evictRetrying evicts p, retrying while its budget refuses, as kubectl
// drain does.
func evictRetrying(t testing.TB, p *corev1.Pod) {
	t.Helper()
	eventually(t, 2*time.Minute, "evicting "+p.Name, func() error { return evict(p) })
}

// runDisruption runs disrupt as a sub-benchmark under a steady client
// load, from loadLead before it to loadTail after it returns, and records
// what the client saw.
func runDisruption(b *testing.B, c valkey.Client, scenario, shape string, disrupt func(b *testing.B)) {
	b.Helper()
	slug := strings.ReplaceAll(strings.ToLower(scenario), " ", "-")
	b.Run(slug, func(b *testing.B) {
		load := startProbeLoad(b, c, "probe-"+slug)
		time.Sleep(loadLead) // the baseline window, not a wait for a condition
		start := time.Now()
		disrupt(b)
		took := time.Since(start)
		time.Sleep(loadTail) // the window after convergence
		a := load.finish(start)
		a.Scenario, a.Cluster, a.Seconds = scenario, shape, took.Seconds()
		longest := 0.0
		for _, g := range a.Shards {
			longest = max(longest, g.LongestGapMs)
		}
		b.Logf("%s (%s): converged after %s; %d requests, %d failed; p50 %.2f ms, p99 %.2f ms, max %.0f ms; longest write gap in a shard %.0f ms",
			scenario, shape, took.Round(time.Millisecond), a.Requests, a.Failed, a.P50Ms, a.P99Ms, a.MaxMs, longest)
		b.ReportMetric(100*float64(a.Requests-a.Failed)/float64(max(a.Requests, 1)), "%ok")
		b.ReportMetric(a.P99Ms, "p99-ms")
		b.ReportMetric(longest, "max-gap-ms")
		saveRecord(b, fmt.Sprintf("availability-%02d-%s", slices.Index(availabilityScenarios, scenario)+1, slug), record.File{Availability: &a})
	})
}
