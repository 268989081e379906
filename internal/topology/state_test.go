package topology

import (
	"fmt"
	"testing"
)

func TestDecideState(t *testing.T) {
	tests := []struct {
		creating bool
		a        Action
		want     State
	}{
		{true, Action{Kind: KindCreateNode, Tier: TierBootstrap}, StateCreating},
		{true, Action{Kind: KindWait, Tier: TierStability}, StateCreating},
		{true, Action{Kind: KindDone, Tier: TierSteady}, StateActive},
		{false, Action{Kind: KindDone, Tier: TierSteady}, StateActive},
		{false, Action{Kind: KindWait, Tier: TierStability}, StateActive},
		{false, Action{Kind: KindCreateNode, Tier: TierStability}, StateActive},
		{false, Action{Kind: KindMigrateSlots, Tier: TierTopology}, StateUpdating},
		{false, Action{Kind: KindFailover, Tier: TierUpdate}, StateUpdating},
		{false, Action{Kind: KindMarkLeaving, Tier: TierCleanup}, StateUpdating},
	}
	for _, tt := range tests {
		if got := DecideState(tt.creating, tt.a); got != tt.want {
			t.Errorf("DecideState(%v, %v) = %s, want %s", tt.creating, tt.a, got, tt.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	ms := formed3()
	kill(ms, "n6", true)
	s := Summarize(Input{Shards: 3, ReplicasPerShard: 1, Members: ms})
	if s.Shards != 3 || s.Nodes != 6 || s.ReadyNodes != 5 || s.SlotsAssigned != TotalSlots {
		t.Fatalf("summary %+v", s)
	}
	if len(s.Shard) != 3 {
		t.Fatalf("shards %+v", s.Shard)
	}
	got := fmt.Sprintf("%+v", s.Shard[0])
	if want := "{Index:0 Primary:n1 Replicas:[n4] Slots:[0-5461] SlotCount:5462}"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if len(s.Shard[2].Replicas) != 0 {
		t.Errorf("dead replica listed: %+v", s.Shard[2])
	}
}

func TestSummarizeReshardingProgress(t *testing.T) {
	in := Input{Shards: 4, ReplicasPerShard: 1, Members: formed3()}
	if got := Summarize(in).SlotsToMove; got != 4096 {
		t.Errorf("3 shards to 4: %d slots to move, want 4096", got)
	}
	in.Shards = 3
	if got := Summarize(in).SlotsToMove; got != 0 {
		t.Errorf("balanced: %d slots to move", got)
	}
	in.Shards = 2
	if got := Summarize(in).SlotsToMove; got != 5461 {
		t.Errorf("3 shards to 2: %d slots to move, want the smallest shard's 5461", got)
	}
	ms := formed3()
	member(ms, "n3").View.Migrating = map[int]string{16383: id("n1"), 16382: id("n1")}
	member(ms, "n2").View.Exports = []Export{{TargetID: id("n1"), Slots: rs(10000, 10922)}}
	got := Summarize(Input{Shards: 3, ReplicasPerShard: 1, Members: ms}).Moving
	want := "[{n2 n1 [10000-10922] atomic} {n3 n1 [16382-16383] classic}]"
	if s := fmt.Sprint(got); s != want {
		t.Errorf("moving %s, want %s", s, want)
	}
}
