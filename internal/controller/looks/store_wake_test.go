package looks

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gomomento/valkey-operator/internal/testbin"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// wakes records the clusters a store woke.
type wakes struct{ got []types.NamespacedName }

func (w *wakes) wake(key types.NamespacedName) { w.got = append(w.got, key) }

// A sample whose look differs in its vitals from the kept one, or fails at
// a pod with a kept look, wakes the cluster; the cluster controller's own
// looks (Take) never do. Asked of a real server, whose role is changed with
// REPLICAOF between looks.
func TestSamplesWakeTheClusterTakesDoNot(t *testing.T) {
	ctx := context.Background()
	addr := testbin.StartPlainValkey(t)
	dial := func(ctx context.Context) (*valkey.Node, error) { return valkey.Dial(ctx, valkey.Target{Address: addr}) }
	cluster := types.NamespacedName{Namespace: "ns", Name: "c"}
	p := pod("uid-1", 0)
	w := &wakes{}
	s := New(w.wake)
	n, err := dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	take := func() {
		t.Helper()
		if _, err := s.Take(ctx, n, cluster, p); err != nil {
			t.Fatal(err)
		}
	}
	sample := func(d func(context.Context) (*valkey.Node, error)) error {
		_, err := s.Recent(ctx, cluster, p, 0, time.Time{}, d)
		return err
	}
	expect := func(step string, want int) {
		t.Helper()
		if len(w.got) != want {
			t.Fatalf("%s: %d wakes (%v), want %d", step, len(w.got), w.got, want)
		}
	}

	refused := func(context.Context) (*valkey.Node, error) { return nil, errors.New("connection refused") }
	if err := sample(refused); err == nil {
		t.Fatal("a sample that could not dial succeeded")
	}
	expect("a failed sample of a pod never looked at", 0)
	take()
	if err := n.ReplicaOf(ctx, "127.0.0.1", 1); err != nil {
		t.Fatal(err)
	}
	take()
	expect("the cluster controller's look at a changed role", 0)
	if err := sample(dial); err != nil {
		t.Fatal(err)
	}
	expect("a sample as the kept look", 0)
	if err := n.ReplicaOf(ctx, "", 0); err != nil {
		t.Fatal(err)
	}
	if err := sample(dial); err != nil {
		t.Fatal(err)
	}
	expect("a sample of a replica turned primary", 1)
	if err := sample(dial); err != nil {
		t.Fatal(err)
	}
	expect("a sample as the sample before", 1)
	if err := sample(refused); err == nil {
		t.Fatal("a sample that could not dial succeeded")
	}
	expect("a failed sample of a pod looked at before", 2)
	if w.got[0] != cluster || w.got[1] != cluster {
		t.Fatalf("woke %v, want %s", w.got, cluster)
	}

	// A store with no wake function only keeps the looks.
	quiet := New(nil)
	quiet.record(cluster, p, valkey.Look{Time: time.Now()})
	if _, err := quiet.Recent(ctx, cluster, p, 0, time.Time{}, refused); err == nil {
		t.Fatal("a sample that could not dial succeeded")
	}
}
