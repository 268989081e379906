package classicmigrate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

func TestPlanBatch(t *testing.T) {
	node := func(id string, owned []valkey.SlotRange, importing, migrating map[int]string) valkey.ClusterNode {
		return valkey.ClusterNode{ID: id, Slots: owned, Importing: importing, Migrating: migrating}
	}
	r := func(a, b int) []valkey.SlotRange { return []valkey.SlotRange{{Start: a, End: b}} }
	tests := []struct {
		name     string
		from, to valkey.ClusterNode
		slots    valkey.SlotRange
		want     Batch
		err      string
	}{
		{name: "fresh move: every slot to mark on both ends",
			from: node("A", r(0, 99), nil, nil), to: node("B", nil, nil, nil), slots: valkey.SlotRange{Start: 10, End: 12},
			want: Batch{Slots: []int{10, 11, 12}, Importing: []int{10, 11, 12}, Migrating: []int{10, 11, 12}}},
		{name: "interrupted after some marks: only the rest",
			from: node("A", r(0, 99), nil, map[int]string{10: "B"}), to: node("B", nil, map[int]string{10: "A", 11: "A"}, nil),
			slots: valkey.SlotRange{Start: 10, End: 12},
			want:  Batch{Slots: []int{10, 11, 12}, Importing: []int{12}, Migrating: []int{11, 12}}},
		{name: "marked towards another node: marked again",
			from: node("A", r(0, 99), nil, map[int]string{10: "C"}), to: node("B", nil, map[int]string{10: "C"}, nil),
			slots: valkey.SlotRange{Start: 10, End: 10},
			want:  Batch{Slots: []int{10}, Importing: []int{10}, Migrating: []int{10}}},
		{name: "target already claimed: ownership still told to both",
			from: node("A", nil, nil, nil), to: node("B", r(10, 11), nil, nil), slots: valkey.SlotRange{Start: 10, End: 11},
			want: Batch{Slots: []int{10, 11}}},
		{name: "claimed by the target, still owned by the source",
			from: node("A", r(10, 11), nil, map[int]string{10: "B", 11: "B"}), to: node("B", r(10, 11), nil, nil),
			slots: valkey.SlotRange{Start: 10, End: 11},
			want:  Batch{Slots: []int{10, 11}}},
		{name: "a slot neither owns",
			from: node("A", r(0, 10), nil, nil), to: node("B", nil, nil, nil), slots: valkey.SlotRange{Start: 10, End: 11},
			err: "moving slot 11: neither the source nor the target owns it"},
		{name: "the nodes answer as others",
			from: node("A", r(0, 10), nil, nil), to: node("C", nil, nil, nil), slots: valkey.SlotRange{Start: 10, End: 10},
			err: "nodes answer as A and C, expected A and B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanBatch(tt.from, tt.to, "A", "B", tt.slots)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("PlanBatch = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestKeyGroups(t *testing.T) {
	slots, groups := KeyGroups(map[int][]string{300: {"c"}, 5: {"a", "b"}, 17: {"d"}})
	if want := []int{5, 17, 300}; !reflect.DeepEqual(slots, want) {
		t.Fatalf("slots = %v, want %v", slots, want)
	}
	if want := [][]string{{"a", "b"}, {"d"}, {"c"}}; !reflect.DeepEqual(groups, want) {
		t.Fatalf("groups = %q, want %q", groups, want)
	}
	if slots, groups := KeyGroups(nil); len(slots) != 0 || len(groups) != 0 {
		t.Fatalf("no keys: %v %q", slots, groups)
	}
}
