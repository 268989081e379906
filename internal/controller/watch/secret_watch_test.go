package watch

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// A Secret is watched while at least one cluster references it, and a
// change to it names the Secret, without its data.
func TestSecretWatchesFollowReferences(t *testing.T) {
	cs := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"},
		Data:       map[string][]byte{"tls.key": []byte("secret material")},
	})
	w := NewSecretWatches(cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	// Before Start: recorded, watched once the operator leads.
	w.Refer(a, "tls")
	go func() { _ = w.Start(ctx) }()

	select {
	case ev := <-w.Events:
		if ev.Object.GetNamespace() != "ns" || ev.Object.GetName() != "tls" {
			t.Fatalf("event for %s/%s", ev.Object.GetNamespace(), ev.Object.GetName())
		}
		if _, isSecret := ev.Object.(*corev1.Secret); isSecret {
			t.Fatalf("the event carries the Secret itself")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the referenced Secret")
	}
	running := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.watches)
	}
	for _, step := range []struct {
		cluster types.NamespacedName
		secret  string
		watches int
	}{
		{b, "tls", 1},   // a second reference shares the watch
		{a, "", 1},      // b still references it
		{b, "other", 1}, // b moves to another Secret: the first one's watch stops
		{b, "", 0},
		{a, "", 0}, // forgetting twice is harmless
	} {
		w.Refer(step.cluster, step.secret)
		if got := running(); got != step.watches {
			t.Fatalf("after %s refers to %q: %d watches, want %d", step.cluster.Name, step.secret, got, step.watches)
		}
	}
}
