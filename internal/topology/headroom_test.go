package topology

import (
	"strings"
	"testing"
)

func TestScaleInHeadroom(t *testing.T) {
	const mb = 1 << 20
	withMemory := func(used, dataset, max int64) func([]Member) {
		return func(ms []Member) {
			for _, n := range []string{"n1", "n2", "n3"} {
				member(ms, n).View.Memory = Memory{Used: used, Dataset: dataset, Max: max}
			}
		}
	}
	tests := []struct {
		name   string
		shards int
		memory func([]Member)
		held   bool
	}{
		{"room to spare: 3 -> 2 drains", 2, withMemory(30*mb, 28*mb, 100*mb), false},
		{"remaining two would pass 90%: held", 2, withMemory(70*mb, 68*mb, 100*mb), true},
		{"no maxmemory: nothing to compare with", 2, withMemory(70*mb, 68*mb, 0), false},
		{"scale-out is never held", 4, withMemory(95*mb, 93*mb, 100*mb), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := formed3()
			tt.memory(ms)
			got := Plan(Input{Shards: tt.shards, ReplicasPerShard: 1, AtomicMigration: true, Members: ms}).Lead()
			if held := got.Reason == ReasonScaleInNoHeadroom; held != tt.held {
				t.Fatalf("held %v, want %v: %s", held, tt.held, got)
			}
			if tt.held && !strings.Contains(got.Detail, "the 2 remaining primaries would hold 208.0 MiB (140.0 MiB of their own and 68.0 MiB from 1 drained shards) against 200.0 MiB of maxmemory, 104%") {
				t.Errorf("detail %q does not name the figures", got.Detail)
			}
		})
	}
}
