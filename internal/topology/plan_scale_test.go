package topology

import (
	"fmt"
	"slices"
	"testing"
)

// An atomic move that takes a source's last slots says so, so that the
// source is told to stay an empty primary: were it to turn itself into a
// replica of the target, the nodes that hear that before the target's
// claim drop its slots and answer CLUSTERDOWN meanwhile. A source that
// keeps slots, and the classic path (whose SETSLOT NODE tells every
// primary the new owner itself), move without it.
func TestMovesSayWhenTheyEmptyTheirSource(t *testing.T) {
	four := func() []Member {
		return mesh(
			nd{name: "n1", shard: 0, slots: rs(0, 4095)},
			nd{name: "n2", shard: 1, slots: rs(4096, 8191)},
			nd{name: "n3", shard: 2, slots: rs(8192, 12287)},
			nd{name: "n4", shard: 3, slots: rs(12288, 16383)})
	}
	uneven := func() []Member {
		return mesh(
			nd{name: "n1", shard: 0, slots: rs(0, 8191)},
			nd{name: "n2", shard: 1, slots: rs(8192, 12287)},
			nd{name: "n3", shard: 2, slots: rs(12288, 16383)})
	}
	tests := []struct {
		name    string
		shards  int
		atomic  bool
		batch   int
		members func() []Member
		want    []string // from->to, and whether the move empties its source
	}{
		{"scale in 4 -> 1: every drained source gives all it has", 1, true, 0, four,
			[]string{"n2->n1 true", "n3->n1 true", "n4->n1 true"}},
		{"scale in 4 -> 2: two sources drained, one into each target", 2, true, 0, four,
			[]string{"n3->n2 true", "n4->n1 true"}},
		{"scale in 3 -> 2: a drained source split over both targets", 2, true, 0, formed3,
			[]string{"n3->n1 true", "n3->n2 true"}},
		{"rebalance: the source keeps its share", 3, true, 0, uneven,
			[]string{"n1->n2 false", "n1->n3 false"}},
		{"scale out: every source keeps its share", 4, true, 0, func() []Member {
			return mesh(append(formed3Nodes(),
				nd{name: "n7", shard: 3},
				nd{name: "n8", shard: 3, role: RoleReplica, primary: "n7"})...)
		}, []string{"n1->n7 false", "n2->n7 false", "n3->n7 false"}},
		{"classic scale in, one batch holding every slot: SETSLOT NODE tells every primary", 1, false, TotalSlots, four,
			[]string{"n2->n1 false", "n3->n1 false", "n4->n1 false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Plan(Input{Shards: tt.shards, AtomicMigration: tt.atomic, BatchSize: tt.batch, Members: tt.members()})
			var got []string
			for _, a := range w.Actions {
				if a.Kind != KindMigrateSlots {
					t.Fatalf("wave %s: want only moves", w)
				}
				m := a.MigrateSlots
				got = append(got, fmt.Sprintf("%s->%s %t", m.From, m.To, m.EmptiesSource))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q\nwave %s", got, tt.want, w)
			}
		})
	}
}
