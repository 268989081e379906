package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gomomento/valkey-operator/internal/controller/options"
)

// Repeated failures of one cluster wait longer each time up to the cap; a
// success starts over; another cluster is not slowed by the first.
func TestErrorBackoff(t *testing.T) {
	o := options.DefaultOptions()
	rl := errorBackoff(o)
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}

	var got []time.Duration
	for range 10 {
		got = append(got, rl.When(a))
	}
	if got[0] != o.ErrorBackoffBase {
		t.Errorf("first retry after %v, want %v", got[0], o.ErrorBackoffBase)
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Errorf("retry %d after %v, shorter than the previous %v", i, got[i], got[i-1])
		}
	}
	if got[1] != 2*got[0] {
		t.Errorf("second retry after %v, want twice the first %v", got[1], got[0])
	}
	if last := got[len(got)-1]; last != o.ErrorBackoffMax {
		t.Errorf("tenth retry after %v, want the cap %v", last, o.ErrorBackoffMax)
	}
	if d := rl.When(b); d != o.ErrorBackoffBase {
		t.Errorf("another cluster's first retry after %v, want %v", d, o.ErrorBackoffBase)
	}
	rl.Forget(a)
	if d := rl.When(a); d != o.ErrorBackoffBase {
		t.Errorf("retry after a success waits %v, want %v", d, o.ErrorBackoffBase)
	}
}
