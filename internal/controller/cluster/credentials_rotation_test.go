package cluster

import (
	"testing"

	"github.com/gomomento/valkey-operator/internal/render"
)

func TestNextRotationStep(t *testing.T) {
	cur := render.Passwords{Operator: "op", Replication: "repl", Exporter: "exp"}
	before, after := cur, cur
	before.NextOperator, before.NextReplication = "op2", "repl2"
	after.PreviousOperator, after.PreviousReplication = "op0", "repl0"
	for _, tc := range []struct {
		name              string
		p                 render.Passwords
		requested, served string
		want              rotationStep
	}{
		{"never asked", cur, "", "", rotationIdle},
		{"asked", cur, "2026-12-04", "", rotationDraw},
		{"asked and served", cur, "2026-12-04", "2026-12-04", rotationIdle},
		{"asked again", cur, "2026-12-05", "2026-12-04", rotationDraw},
		{"the annotation removed after a rotation", cur, "", "2026-12-04", rotationIdle},
		{"next passwords drawn", before, "2026-12-04", "", rotationSwitch},
		{"a drawn rotation completes even if the request goes", before, "", "", rotationSwitch},
		{"switched", after, "2026-12-04", "", rotationFinish},
		{"a switched rotation completes even if the request changes", after, "2026-12-05", "", rotationFinish},
	} {
		if got := nextRotationStep(tc.p, tc.requested, tc.served); got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}
