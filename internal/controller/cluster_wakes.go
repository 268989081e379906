package controller

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// clusterWakes carries the clusters the autoscaler's samples found changed
// to the cluster controller. Wake never blocks the sampler and loses no
// cluster: keys wait in a set, one per cluster however often woken, until
// the forwarder hands them to the controller's channel source, which reads
// only once the controller runs (after the manager starts and, with leader
// election, once it leads).
type clusterWakes struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]bool
	// signal says pending is not empty; it holds one signal at most.
	signal chan struct{}
	events chan event.GenericEvent
}

func newClusterWakes() *clusterWakes {
	return &clusterWakes{pending: map[types.NamespacedName]bool{}, signal: make(chan struct{}, 1), events: make(chan event.GenericEvent)}
}

// Wake asks for the cluster to be reconciled.
func (w *clusterWakes) Wake(key types.NamespacedName) {
	w.mu.Lock()
	w.pending[key] = true
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// take empties the set.
func (w *clusterWakes) take() []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(w.pending))
	for key := range w.pending {
		out = append(out, key)
	}
	clear(w.pending)
	return out
}

// Start forwards the woken clusters to events until ctx ends.
func (w *clusterWakes) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.signal:
		}
		for _, key := range w.take() {
			vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			select {
			case w.events <- event.GenericEvent{Object: vc}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}
