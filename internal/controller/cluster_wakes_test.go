package controller

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Wakes sent before the forwarder runs, or faster than the controller
// reads, neither block the sender nor are lost: each woken cluster arrives
// once.
func TestClusterWakesNeverBlockNorLose(t *testing.T) {
	w := newClusterWakes()
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	for range 1000 {
		w.Wake(a)
	}
	w.Wake(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Start(ctx) }()
	got := map[types.NamespacedName]int{}
	for range 2 {
		select {
		case ev := <-w.events:
			got[types.NamespacedName{Namespace: ev.Object.GetNamespace(), Name: ev.Object.GetName()}]++
		case <-time.After(10 * time.Second):
			t.Fatalf("woken clusters not delivered; got %v", got)
		}
	}
	if got[a] != 1 || got[b] != 1 {
		t.Fatalf("delivered %v, want a and b once each", got)
	}
	// Woken again while the forwarder runs: delivered again.
	w.Wake(a)
	select {
	case ev := <-w.events:
		if ev.Object.GetName() != "a" {
			t.Fatalf("delivered %s, want a", ev.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cluster woken while running was not delivered")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
