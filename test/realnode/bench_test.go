package realnode

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// benchKeys is how many keys the disruptive scenarios write before
// acting, as test/e2e's BenchmarkRealNodeCounterparts does.
const benchKeys = 500

// BenchmarkRealNode runs on the real node the scenarios test/e2e's
// BenchmarkRealNodeCounterparts runs on the local runtime, for the
// report's table of the two side by side (make bench runs both).
func BenchmarkRealNode(b *testing.B) {
	b.Run("BootstrapTLS", func(b *testing.B) {
		ns := "bench-tls"
		createRestrictedNamespace(b, ns)
		cfg := createMenu(b, ns, false)
		f := &tlsCluster{t: b, key: client.ObjectKey{Namespace: ns, Name: "cache"}, secret: "cache-tls", ca: testcerts.NewCA("bench-ca")}
		f.leaf = testcerts.Leaf(f.ca, f.key.Name, ns, clusterDomain)
		start := time.Now()
		if err := k8sClient.Create(context.Background(), testcerts.Secret(f.secret, ns, f.leaf)); err != nil {
			b.Fatal(err)
		}
		createCluster(b, ns, f.key.Name, cfg, 3, 1, func(s *valkeyv1.ValkeyClusterSpec) {
			s.TLS = &valkeyv1.TLSSpec{SecretRef: f.secret}
		})
		waitConvergedVia(b, f.key, 3, 1, 5*time.Minute, f.dial)
		f.waitCertificatesServed(time.Minute)
		saveRealNode(b, record.RealNode{Scenario: record.ScenarioBootstrapTLS, Seconds: time.Since(start).Seconds()})
	})
	b.Run("PrimaryDelete", func(b *testing.B) {
		ns := "bench-primary"
		createNamespace(b, ns)
		key := createCluster(b, ns, "cache", createMenu(b, ns, false), 3, 1)
		vc := waitConverged(b, key, 3, 1, 5*time.Minute)
		pods, _ := waitPodsHealthy(b, key, 6, time.Minute)
		c := clusterClient(b, pods[0].Status.PodIP)
		want := writeKeys(b, c, "k", benchKeys)
		waitReplicated(b, c)
		primary := vc.Status.ShardStatuses[0].Primary
		start := time.Now()
		if err := k8sClient.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: primary}}); err != nil {
			b.Fatal(err)
		}
		// The operator replaces a deleted pod's node by a new one.
		waitConverged(b, key, 3, 1, 5*time.Minute, primary)
		took := time.Since(start)
		saveRealNode(b, record.RealNode{Scenario: record.ScenarioPrimaryDelete, Seconds: took.Seconds(),
			Keys: len(want), Lost: countLost(c, want)})
	})
	b.Run("FullRestart", func(b *testing.B) {
		ns := "bench-restart"
		createNamespace(b, ns)
		cfg := createMenu(b, ns, false, func(s *valkeyv1.ValkeyConfigSpec) {
			s.Persistence = &valkeyv1.Persistence{Size: resource.MustParse("1Gi"), Appendfsync: valkeyv1.AppendFsyncAlways}
		})
		key := createCluster(b, ns, "durable", cfg, 3, 1)
		vc := waitConverged(b, key, 3, 1, 5*time.Minute)
		pods, _ := waitPodsHealthy(b, key, 6, time.Minute)
		uids := map[string]types.UID{}
		for _, p := range pods {
			uids[p.Name] = p.UID
		}
		c := clusterClient(b, pods[0].Status.PodIP)
		want := writeKeys(b, c, "k", benchKeys)
		waitReplicated(b, c)
		start := time.Now()
		if err := k8sClient.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns),
			client.MatchingLabels(render.ClusterSelector(key.Name))); err != nil {
			b.Fatal(err)
		}
		members := slices.Clone(vc.Status.Nodes)
		// Converged counts once every member runs in a new pod: the status
		// read right after the deletion is still the one written before it.
		eventually(b, 5*time.Minute, "every node back with a new running pod", func() error {
			for _, name := range members {
				var p corev1.Pod
				if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
					return err
				}
				if p.UID == uids[name] || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
					return fmt.Errorf("%s: not yet replaced and running", name)
				}
			}
			return nil
		})
		waitConverged(b, key, 3, 1, 5*time.Minute)
		took := time.Since(start)
		// Every pod has a new IP: the old client knows none of them.
		pods, _ = waitPodsHealthy(b, key, 6, time.Minute)
		c = clusterClient(b, pods[0].Status.PodIP)
		saveRealNode(b, record.RealNode{Scenario: record.ScenarioFullRestart, Seconds: took.Seconds(),
			Keys: len(want), Lost: countLost(c, want)})
	})
}

// countLost is how many of want do not read back as written, once the
// client has had checkAll's time to learn the new topology.
func countLost(c valkey.Client, want map[string]string) int {
	lost := 0
	deadline := time.Now().Add(30 * time.Second)
	for k, v := range want {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			got, err := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
			cancel()
			if err == nil && got == v {
				break
			}
			if time.Now().After(deadline) {
				lost++
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return lost
}

// saveRealNode reports and records one scenario on the real node.
func saveRealNode(b *testing.B, r record.RealNode) {
	b.Helper()
	r.Runtime = record.RuntimeRealNode
	b.ReportMetric(r.Seconds, "s/op")
	b.ReportMetric(float64(r.Lost), "keys-lost/op")
	if err := record.Save("realnode-real-"+r.Scenario, record.File{RealNode: &r}); err != nil {
		b.Fatalf("saving the record: %v", err)
	}
}
