package cluster

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestNodeExpectations(t *testing.T) {
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	t0 := time.Unix(1000, 0)
	in := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	var e nodeExpectations
	if got := e.unseen(a, in(), t0); len(got) != 0 {
		t.Fatalf("nothing expected yet, got %v", got)
	}
	e.expect(a, "a-2", t0)
	e.expect(a, "a-1", t0)
	e.expect(b, "b-1", t0)

	steps := []struct {
		name    string
		cluster types.NamespacedName
		seen    func(string) bool
		at      time.Time
		want    []string
	}{
		{"the cache shows none yet", a, in(), t0.Add(time.Second), []string{"a-1", "a-2"}},
		{"another cluster's nodes do not count", a, in("b-1"), t0.Add(time.Second), []string{"a-1", "a-2"}},
		{"one arrives", a, in("a-1"), t0.Add(2 * time.Second), []string{"a-2"}},
		{"a node seen once is not expected again, even if it goes", a, in(), t0.Add(3 * time.Second), []string{"a-2"}},
		{"a node the cache never shows stops holding the cluster", a, in(), t0.Add(expectationTTL + time.Second), nil},
		{"the other cluster still waits", b, in(), t0.Add(time.Second), []string{"b-1"}},
		{"and is released when it sees its node", b, in("b-1"), t0.Add(time.Second), nil},
	}
	for _, s := range steps {
		if got := e.unseen(s.cluster, s.seen, s.at); !slices.Equal(got, s.want) {
			t.Fatalf("%s: unseen = %v, want %v", s.name, got, s.want)
		}
	}
	if len(e.created) != 0 {
		t.Fatalf("expectations left behind: %v", e.created)
	}
}
