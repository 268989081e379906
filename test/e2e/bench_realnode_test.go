package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// realNodeKeys is how many keys the disruptive scenarios write before
// acting, as test/realnode's counterpart does.
const realNodeKeys = 500

// BenchmarkRealNodeCounterparts runs on the local runtime the scenarios
// test/realnode's BenchmarkRealNode runs on a real kubelet, for the
// report's table of the two side by side.
func BenchmarkRealNodeCounterparts(b *testing.B) {
	b.Run("BootstrapTLS", func(b *testing.B) {
		ns := benchNamespace("bench-rn-tls")
		ca := testcerts.NewCA("bench-rn-ca")
		start := time.Now()
		newTLSCluster(b, ns, ca, 3, 1)
		saveRealNode(b, record.RealNode{Scenario: record.ScenarioBootstrapTLS, Seconds: time.Since(start).Seconds()})
	})
	b.Run("PrimaryDelete", func(b *testing.B) {
		ns := benchNamespace("bench-rn-primary")
		key := newPlainCluster(b, ns, "cache", 3, 1)
		vc := waitConverged(b, key, 3, 1, 5*time.Minute)
		c := clusterClient(b, seedOf(key), nil)
		want := writeKeys(b, c, "k", realNodeKeys)
		waitReplicated(b, c)
		primary := vc.Status.ShardStatuses[0].Primary
		start := time.Now()
		if err := k8sClient.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: primary}}); err != nil {
			b.Fatal(err)
		}
		// The operator replaces a deleted pod's node by a new one: converged
		// counts once the status no longer names the old one.
		eventually(b, 5*time.Minute, primary+" replaced", func() error {
			if slices.Contains(getCluster(b, key).Status.Nodes, primary) {
				return fmt.Errorf("%s still a member", primary)
			}
			return nil
		})
		waitConverged(b, key, 3, 1, 5*time.Minute)
		took := time.Since(start)
		saveRealNode(b, record.RealNode{Scenario: record.ScenarioPrimaryDelete, Seconds: took.Seconds(),
			Keys: len(want), Lost: countLost(c, want)})
	})
	b.Run("FullRestart", func(b *testing.B) {
		ns := benchNamespace("bench-rn-restart")
		key := newDurableCluster(b, ns, 3, 1)
		vc := waitConverged(b, key, 3, 1, 5*time.Minute)
		members := vc.Status.Nodes
		uids := map[string]types.UID{}
		for _, name := range members {
			var p corev1.Pod
			if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
				b.Fatal(err)
			}
			uids[name] = p.UID
		}
		c := clusterClient(b, seedOf(key), nil)
		want := writeKeys(b, c, "k", realNodeKeys)
		waitReplicated(b, c)
		start := time.Now()
		if err := k8sClient.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns),
			client.MatchingLabels(render.ClusterSelector(key.Name))); err != nil {
			b.Fatal(err)
		}
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
		// The status read right after the pods came back may still be the
		// one written before the deletion: the nodes themselves say when
		// the cluster has re-formed.
		eventually(b, 5*time.Minute, "every node reaching every other at its new address", func() error {
			return reformed(ns, members)
		})
		waitConverged(b, key, 3, 1, 5*time.Minute)
		took := time.Since(start)
		saveRealNode(b, record.RealNode{Scenario: record.ScenarioFullRestart, Seconds: took.Seconds(),
			Keys: len(want), Lost: countLost(c, want)})
	})
}

// saveRealNode reports and records one scenario on the local runtime.
func saveRealNode(b *testing.B, r record.RealNode) {
	b.Helper()
	r.Runtime = record.RuntimeLocal
	b.ReportMetric(r.Seconds, "s/op")
	b.ReportMetric(float64(r.Lost), "keys-lost/op")
	saveRecord(b, "realnode-local-"+r.Scenario, record.File{RealNode: &r})
}
