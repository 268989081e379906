package reload

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

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
