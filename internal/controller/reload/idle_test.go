package reload

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestSafetyIntervalJitter(t *testing.T) {
	const base = 5 * time.Minute
	seen := map[time.Duration]bool{}
	for i := range 200 {
		uid := types.UID(fmt.Sprintf("cluster-%d", i))
		got := safetyInterval(uid, base)
		if got < 4*time.Minute || got > 6*time.Minute {
			t.Fatalf("safetyInterval(%s) = %s, want within 5m ± 20%%", uid, got)
		}
		if again := safetyInterval(uid, base); again != got {
			t.Fatalf("safetyInterval(%s) = %s then %s, want the same", uid, got, again)
		}
		seen[got.Round(10*time.Second)] = true
	}
	// Spread: 200 clusters over a two-minute range land on many values.
	if len(seen) < 8 {
		t.Fatalf("200 clusters got %d distinct intervals (to 10 s), want a spread", len(seen))
	}
	for _, tc := range []struct {
		name string
		uid  types.UID
		base time.Duration
	}{
		{"empty uid", "", base},
		{"short base", "a", time.Second},
		{"zero base", "a", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := safetyInterval(tc.uid, tc.base)
			lo, hi := time.Duration(float64(tc.base)*0.8), time.Duration(float64(tc.base)*1.2)
			if got < lo || got > hi {
				t.Fatalf("safetyInterval(%q, %s) = %s, want in [%s, %s]", tc.uid, tc.base, got, lo, hi)
			}
		})
	}
}

func TestIdle(t *testing.T) {
	base := func() idleInput {
		return idleInput{
			Settled:     true,
			SameCluster: true,
			Want:        "h1",
			Known:       map[types.UID]string{"a": "h1", "b": "h1"},
			Pods:        []types.UID{"a", "b"},
			SinceFull:   time.Minute,
			Safety:      5 * time.Minute,
		}
	}
	for _, tc := range []struct {
		name string
		edit func(in *idleInput)
		want bool
	}{
		{"every pod known on the content, safety pass not due", func(*idleInput) {}, true},
		{"the Secret changed", func(in *idleInput) { in.Changed = true }, false},
		{"the last pass did not settle", func(in *idleInput) { in.Settled = false }, false},
		{"the cluster changed", func(in *idleInput) { in.SameCluster = false }, false},
		{"the safety pass is due", func(in *idleInput) { in.SinceFull = 5 * time.Minute }, false},
		{"never visited", func(in *idleInput) { in.SinceFull = time.Duration(1<<63 - 1) }, false},
		{"a new pod", func(in *idleInput) { in.Pods = append(in.Pods, "c") }, false},
		{"a pod replaced", func(in *idleInput) { in.Pods = []types.UID{"a", "c"} }, false},
		{"a pod gone", func(in *idleInput) { in.Pods = in.Pods[:1] }, false},
		{"a pod known on older content", func(in *idleInput) { in.Known["b"] = "h0" }, false},
		{"no running pod", func(in *idleInput) { in.Pods, in.Known = nil, map[types.UID]string{} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.edit(&in)
			if got := idle(in); got != tc.want {
				t.Fatalf("idle(%+v) = %v, want %v", in, got, tc.want)
			}
		})
	}
}
