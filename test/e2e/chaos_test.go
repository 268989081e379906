package e2e

// The chaos tests (TestChaos*) provoke failures outside the operator's
// control: the operator killed mid-migration, the API server gone, a
// Kubernetes node silent, every pod of a cluster deleted at once, an
// operator throttled by its API client. Each checks every acknowledged
// write afterwards (or the exact documented loss) and that the cluster
// converges with a status that tells the truth. `make test` runs them all;
// those that take the API server, a Kubernetes node or the operator from
// every other test are not parallel, so they run first, alone.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// truthWatch polls a cluster's status and the pods it names, and keeps the
// longest time the status claimed a healthy cluster while it was broken: a
// member without a running pod (gone, or being deleted) or a slot
// unassigned. Healthy is what the status says with state Active and the
// Degraded condition False; a cluster healing a failure stays Active with
// Degraded True, which is the truth (docs/concepts.md). The operator needs
// a moment to notice a change, so the figure is rarely zero; a status that
// keeps claiming health over a broken cluster shows up as a long one.
type truthWatch struct {
	mu      sync.Mutex
	longest time.Duration
	example string
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func watchTruth(t testing.TB, key client.ObjectKey) *truthWatch {
	w := &truthWatch{done: make(chan struct{})}
	t.Cleanup(func() { w.stop() })
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		var since time.Time
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if broken, ok := w.check(key); ok {
				switch {
				case broken == "":
					since = time.Time{}
				case since.IsZero():
					since = time.Now()
				default:
					w.mu.Lock()
					if d := time.Since(since); d > w.longest {
						w.longest, w.example = d, broken
					}
					w.mu.Unlock()
				}
			}
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// check says what is broken while the status claims health ("" when it
// does not, or nothing is broken); ok is false when the API could not be
// read.
func (w *truthWatch) check(key client.ObjectKey) (broken string, ok bool) {
	ctx := context.Background()
	var vc valkeyv1.ValkeyCluster
	if err := k8sClient.Get(ctx, key, &vc); err != nil {
		return "", false
	}
	if d := meta.FindStatusCondition(vc.Status.Conditions, "Degraded"); vc.Status.State != valkeyv1.StateActive || d == nil || d.Status != metav1.ConditionFalse {
		return "", true
	}
	if vc.Status.SlotsAssigned != topology.TotalSlots {
		return fmt.Sprintf("Active and not Degraded with %d slots assigned", vc.Status.SlotsAssigned), true
	}
	var pods corev1.PodList
	if err := k8sClient.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels{valkeyv1.LabelInstance: key.Name}); err != nil {
		return "", false
	}
	running := map[string]bool{}
	for _, p := range pods.Items {
		running[p.Name] = p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning
	}
	for _, n := range vc.Status.Nodes {
		if !running[n] {
			return fmt.Sprintf("Active and not Degraded naming member %s, whose pod is not running", n), true
		}
	}
	return "", true
}

// stop ends the polling and returns the longest time the status claimed a
// healthy cluster while it was broken, with what was broken.
func (w *truthWatch) stop() (time.Duration, string) {
	w.once.Do(func() { close(w.done) })
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest, w.example
}
