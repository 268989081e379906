package topology

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

func TestEvenPlan(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{1, "[0-16383]"},
		{2, "[0-8191 8192-16383]"},
		{3, "[0-5461 5462-10922 10923-16383]"},
		{5, "[0-3276 3277-6553 6554-9830 9831-13107 13108-16383]"},
	}
	for _, tt := range tests {
		plan := EvenPlan(tt.n)
		if got := fmt.Sprint(plan); got != tt.want {
			t.Errorf("EvenPlan(%d) = %s, want %s", tt.n, got, tt.want)
		}
		if CountSlots(plan) != TotalSlots {
			t.Errorf("EvenPlan(%d) covers %d slots", tt.n, CountSlots(plan))
		}
	}
	if EvenPlan(0) != nil || evenCounts(-1) != nil {
		t.Errorf("no shards, no plan")
	}
}

func TestEvenCounts(t *testing.T) {
	for n := 1; n <= 100; n++ {
		c := evenCounts(n)
		sum := 0
		for i, v := range c {
			sum += v
			if i > 0 && v > c[i-1] {
				t.Fatalf("evenCounts(%d) not front-loaded: %v", n, c)
			}
		}
		if sum != TotalSlots || c[0]-c[n-1] > 1 {
			t.Fatalf("evenCounts(%d) = %v", n, c)
		}
	}
}

func TestNormalizeAndFormat(t *testing.T) {
	got := NormalizeRanges([]SlotRange{{Start: 10, End: 20}, {Start: 0, End: 5}, {Start: 6, End: 9}, {Start: 30, End: 30}, {Start: 15, End: 25}})
	if FormatRanges(got) != "0-25,30" {
		t.Errorf("got %s", FormatRanges(got))
	}
	if NormalizeRanges(nil) != nil {
		t.Errorf("nil in, nil out")
	}
}

func TestBalanceTargets(t *testing.T) {
	tests := []struct {
		name   string
		counts map[int]int
		shards int
		want   string
	}{
		{"scale out keeps shares for shards to come", map[int]int{0: 5462, 1: 5461, 2: 5461}, 5,
			"map[0:3277 1:3277 2:3277]"},
		{"scale in keeps the fullest", map[int]int{0: 3000, 1: 4000, 2: 3384, 3: 6000}, 2,
			"map[0:0 1:8192 2:0 3:8192]"},
		{"ties keep the lower index", map[int]int{0: 4096, 1: 4096, 2: 4096, 3: 4096}, 3,
			"map[0:5462 1:5461 2:5461 3:0]"},
		{"balanced stays", map[int]int{0: 8192, 1: 8192}, 2, "map[0:8192 1:8192]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(BalanceTargets(tt.counts, tt.shards)); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestNextMove(t *testing.T) {
	r := func(a, b int) []SlotRange { return []SlotRange{{Start: a, End: b}} }
	tests := []struct {
		name   string
		shards []ShardSlots
		batch  int
		want   string
	}{
		{"largest surplus to largest deficit", []ShardSlots{
			{Key: 0, Slots: r(0, 5461), Target: 4096, CanReceive: true},
			{Key: 1, Slots: r(5462, 10922), Target: 4096, CanReceive: true},
			{Key: 2, Slots: r(10923, 16383), Target: 4096, CanReceive: true},
			{Key: 3, Target: 4096, CanReceive: true},
		}, 64, "{0 3 5398-5461}"},
		{"batch shrinks to the deficit", []ShardSlots{
			{Key: 0, Slots: r(0, 8199), Target: 8192, CanReceive: true},
			{Key: 1, Slots: r(8200, 16383), Target: 8192, CanReceive: true},
		}, 64, "{0 1 8192-8199}"},
		{"drain the smallest first", []ShardSlots{
			{Key: 0, Slots: r(0, 5999), Target: 8192, CanReceive: true},
			{Key: 1, Slots: r(6000, 9999), Target: 8192, CanReceive: true},
			{Key: 2, Slots: r(10000, 12999), Target: 0},
			{Key: 3, Slots: r(13000, 16383), Target: 0},
		}, 64, "{2 1 12936-12999}"},
		{"no receiver", []ShardSlots{
			{Key: 0, Slots: r(0, 16383), Target: 8192, CanReceive: true},
			{Key: 1, Target: 8192},
		}, 64, "none"},
		{"balanced", []ShardSlots{
			{Key: 0, Slots: r(0, 8191), Target: 8192, CanReceive: true},
			{Key: 1, Slots: r(8192, 16383), Target: 8192, CanReceive: true},
		}, 64, "none"},
		{"batch limited to the top range", []ShardSlots{
			{Key: 0, Slots: []SlotRange{{Start: 0, End: 8000}, {Start: 9000, End: 9009}}, Target: 4000, CanReceive: true},
			{Key: 1, Target: 4000, CanReceive: true},
		}, 64, "{0 1 9000-9009}"},
	}
	for _, tt := range tests {
		mv, ok := nextMove(tt.shards, tt.batch)
		got := "none"
		if ok {
			got = fmt.Sprint(mv)
		}
		if got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// PlanTransfers hands out a whole rebalance in one wave: every slot moves
// at most once, each source and target pair appears once, and applying the
// transfers reaches the even distribution.
func TestPlanTransfers(t *testing.T) {
	for _, tt := range []struct {
		name  string
		from  int
		to    int
		waves int
	}{
		{"3 to 4", 3, 4, 1}, {"1 to 16", 1, 16, 1}, {"4 to 3", 4, 3, 1}, {"16 to 3", 16, 3, 1}, {"5 to 5", 5, 5, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			owned := map[int][]SlotRange{}
			for i, r := range EvenPlan(tt.from) {
				owned[i] = []SlotRange{r}
			}
			for i := tt.from; i < tt.to; i++ {
				owned[i] = nil
			}
			counts := map[int]int{}
			for k, rs := range owned {
				counts[k] = CountSlots(rs)
			}
			targets := BalanceTargets(counts, tt.to)
			waves := 0
			for ; waves < 50; waves++ {
				var shards []ShardSlots
				for _, k := range slices.Sorted(maps.Keys(owned)) {
					shards = append(shards, ShardSlots{Key: k, Slots: owned[k], Target: targets[k], CanReceive: targets[k] > 0})
				}
				ts := PlanTransfers(shards)
				if len(ts) == 0 {
					break
				}
				seen := map[[2]int]bool{}
				moved := map[int]bool{}
				for _, tr := range ts {
					if seen[[2]int{tr.From, tr.To}] {
						t.Fatalf("%d to %d twice in one wave: %v", tr.From, tr.To, ts)
					}
					seen[[2]int{tr.From, tr.To}] = true
					for _, r := range tr.Slots {
						for s := r.Start; s <= r.End; s++ {
							if moved[s] {
								t.Fatalf("slot %d in two transfers: %v", s, ts)
							}
							moved[s] = true
						}
						owned[tr.From] = removeRange(owned[tr.From], r)
						owned[tr.To] = NormalizeRanges(append(owned[tr.To], r))
					}
				}
			}
			if waves > tt.waves {
				t.Errorf("%d waves, want at most %d", waves, tt.waves)
			}
			total := 0
			for k, rs := range owned {
				n := CountSlots(rs)
				total += n
				if n != targets[k] {
					t.Errorf("shard %d ends with %d slots, want %d", k, n, targets[k])
				}
			}
			if total != TotalSlots {
				t.Errorf("%d slots in all", total)
			}
		})
	}
}

func TestTopSlots(t *testing.T) {
	for _, tt := range []struct {
		in   []SlotRange
		n    int
		want string
	}{
		{[]SlotRange{{Start: 0, End: 100}}, 10, "91-100"},
		{[]SlotRange{{Start: 0, End: 5}, {Start: 10, End: 12}}, 5, "4-5,10-12"},
		{[]SlotRange{{Start: 10, End: 12}, {Start: 0, End: 5}}, 3, "10-12"},
		{[]SlotRange{{Start: 0, End: 5}}, 64, "0-5"},
		{nil, 64, ""},
	} {
		got := TopSlots(tt.in, tt.n)
		if s := FormatRanges(got); s != tt.want {
			t.Errorf("TopSlots(%v, %d) = %s, want %s", tt.in, tt.n, s, tt.want)
		}
		if n := CountSlots(got); n > tt.n {
			t.Errorf("TopSlots(%v, %d) holds %d slots", tt.in, tt.n, n)
		}
	}
}
