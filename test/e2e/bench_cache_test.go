package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
)

// secretCacheBytes is the data of each unrelated Secret: about a TLS
// certificate and key, or a few tokens.
const secretCacheBytes = 4096

// BenchmarkSecretCache starts the operator as its own process while
// $VALKEY_BENCH_SECRETS (5,000) Secrets that are not its own exist, beside
// one small cluster of its own, once caching every Secret and Pod of the
// Kubernetes cluster (--filter-cache=false, as before the filter) and once
// only its own (the default), and measures its memory once it has gone
// quiet, and the most it ever held.
func BenchmarkSecretCache(b *testing.B) {
	bin := buildOperatorBinary(b)
	// The suite's in-process operator would reconcile the same cluster.
	stopOperator()
	defer func() {
		var err error
		if stopOperator, err = startOperator(context.Background()); err != nil {
			b.Fatalf("restarting the suite's operator: %v", err)
		}
	}()
	n := envInt("VALKEY_BENCH_SECRETS", 5000)
	ns := benchNamespace("bench-secrets")
	createNamespace(b, ns)
	b.Cleanup(func() {
		// The namespace controller deletes the Secrets; no need to wait.
		_ = k8sClient.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	start := time.Now()
	createUnrelatedSecrets(b, ns, n)
	b.Logf("created %d Secrets of %d bytes in %s", n, secretCacheBytes, time.Since(start).Round(time.Second))
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: createMenu(b, ns), Shards: 1},
	}
	if err := k8sClient.Create(context.Background(), vc); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		for _, filtered := range []bool{false, true} {
			r := measureSecretCache(b, bin, vc, n, filtered)
			b.Logf("filtered %v: RSS %.1f MiB (peak %.1f), heap %.1f MiB", filtered, r.RSSMiB, r.PeakRSSMiB, r.HeapMiB)
			saveRecord(b, fmt.Sprintf("secret-cache-%05d-filtered-%v", n, filtered), record.File{SecretCache: &r})
			if filtered {
				b.ReportMetric(r.RSSMiB, "MiB-RSS-filtered")
			} else {
				b.ReportMetric(r.RSSMiB, "MiB-RSS-unfiltered")
			}
		}
	}
}

func measureSecretCache(b *testing.B, bin string, vc *valkeyv1.ValkeyCluster, secrets int, filtered bool) record.SecretCache {
	b.Helper()
	op := startFootprintOperator(b, bin, "--filter-cache="+strconv.FormatBool(filtered))
	waitConverged(b, client.ObjectKeyFromObject(vc), 1, 0, 5*time.Minute)
	op.waitQuiet(b, time.Minute)
	s := op.sample(b)
	heap, _ := op.metric("go_memstats_heap_inuse_bytes")
	r := record.SecretCache{
		Secrets: secrets, SecretBytes: secretCacheBytes, Filtered: filtered,
		RSSMiB: s.rssMiB, PeakRSSMiB: op.peakRSSMiB(b), HeapMiB: heap / (1 << 20),
	}
	op.stop(b)
	return r
}

// peakRSSMiB is the most memory the process has held (VmHWM).
func (op footprintOperator) peakRSSMiB(b *testing.B) float64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", op.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// createUnrelatedSecrets creates n Secrets of random data, without the
// operator's labels, 16 at a time.
func createUnrelatedSecrets(b *testing.B, ns string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				data := make([]byte, secretCacheBytes)
				_, _ = rand.Read(data)
				s := &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("unrelated-%05d", i),
						Labels: map[string]string{"app.kubernetes.io/name": "someone-else"}},
					Data: map[string][]byte{"payload": data},
				}
				if err := k8sClient.Create(context.Background(), s); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("creating Secrets: %v", err)
	default:
	}
}
