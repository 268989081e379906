package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/internal/localkube"
)

// poolLabel marks, and poolTaint repels from, a test's own node pool.
const poolLabel = "e2e.valkey.gomomento.com/pool"

// startNodePool runs a pool of two nodes of a test's own beside the shared
// ones, labelled poolLabel=name and, with taint, tainted
// poolLabel=name:NoSchedule from their first write, so that no other
// test's pod lands there. It stops, and its Nodes go, when the test ends
// (after the test's clusters, which are deleted first).
func startNodePool(t testing.TB, name string, taint bool) []string {
	t.Helper()
	dir := filepath.Join(baseDir, "pool-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := localkube.Options{
		Config:         local.ControlPlane.Config,
		BaseDir:        dir,
		Nodes:          2,
		NodeNamePrefix: "pool-" + name + "-",
		NodeLabels:     map[string]string{poolLabel: name},
		NoProvisioner:  true,
	}
	if taint {
		opts.NodeTaints = []corev1.Taint{{Key: poolLabel, Value: name, Effect: corev1.TaintEffectNoSchedule}}
	}
	rt, err := localkube.StartRuntime(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting node pool %s: %v", name, err)
	}
	nodes := rt.NodeNames()
	t.Cleanup(func() {
		if err := rt.Stop(); err != nil {
			t.Errorf("stopping node pool %s: %v", name, err)
		}
		for _, n := range nodes {
			err := k8sClient.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", n, err)
			}
		}
	})
	return nodes
}
