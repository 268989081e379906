package controller

import (
	"testing"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
)

func TestResharding(t *testing.T) {
	moving := []topology.MoveSummary{{From: "a", To: "d", Slots: []topology.SlotRange{{Start: 0, End: 99}}, Method: topology.MigrationAtomic}}
	tests := []struct {
		name string
		prev *valkeyv1.ReshardingStatus
		s    topology.Summary
		want string // progress, "" for no status
		n    int    // moves listed
	}{
		{"balanced and idle: no status", nil, topology.Summary{}, "", 0},
		{"a change begins", nil, topology.Summary{SlotsToMove: 4096, Moving: moving}, "0/4096 slots", 1},
		{"half way", &valkeyv1.ReshardingStatus{SlotsTotal: 4096}, topology.Summary{SlotsToMove: 2048}, "2048/4096 slots", 0},
		{"the last move in flight", &valkeyv1.ReshardingStatus{SlotsTotal: 4096}, topology.Summary{Moving: moving}, "4096/4096 slots", 1},
		{"the spec grows mid-way", &valkeyv1.ReshardingStatus{SlotsTotal: 100}, topology.Summary{SlotsToMove: 5000}, "0/5000 slots", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resharding(tt.prev, tt.s)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("got %+v, want none", got)
				}
				return
			}
			if got == nil || got.Progress != tt.want || len(got.Moving) != tt.n {
				t.Fatalf("got %+v, want progress %q with %d moves", got, tt.want, tt.n)
			}
		})
	}
	got := resharding(nil, topology.Summary{SlotsToMove: 100, Moving: moving})
	if m := got.Moving[0]; m.Source != "a" || m.Target != "d" || m.Slots != "0-99" || m.SlotCount != 100 || m.Method != "atomic" {
		t.Errorf("move %+v", m)
	}
}

// A cluster owing a roll is Updating whatever its planner does first.
func TestDecideStateOwedRoll(t *testing.T) {
	repair := topology.Action{Kind: topology.KindDeleteNode, Tier: topology.TierStability}
	done := topology.Action{Kind: topology.KindDone, Tier: topology.TierSteady}
	current := &observed{members: []topology.Member{{Name: "a"}, {Name: "b"}}}
	owed := &observed{members: []topology.Member{{Name: "a"}, {Name: "b", Outdated: true}}}
	tests := []struct {
		name string
		lead topology.Action
		o    *observed
		want topology.State
	}{
		{"a repair on a current cluster", repair, current, topology.StateActive},
		{"a repair while a roll is owed", repair, owed, topology.StateUpdating},
		{"converged", done, current, topology.StateActive},
		{"creating stays creating", repair, owed, topology.StateCreating},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideState(tt.want == topology.StateCreating, tt.lead, tt.o); got != tt.want {
				t.Errorf("state %s, want %s", got, tt.want)
			}
		})
	}
}
