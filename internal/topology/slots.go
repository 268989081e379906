package topology

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/gomomento/valkey-operator/internal/slotrange"
)

// SlotRange is an inclusive range of hash slots, the Valkey client's type
// too.
type SlotRange = slotrange.Range

// CountSlots is the number of slots covered by rs, which must not overlap.
func CountSlots(rs []SlotRange) int {
	n := 0
	for _, r := range rs {
		n += r.Count()
	}
	return n
}

// FormatRanges joins rs as "0-99,200-299".
func FormatRanges(rs []SlotRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// NormalizeRanges sorts rs and merges overlapping or adjacent ranges.
func NormalizeRanges(rs []SlotRange) []SlotRange { return slotrange.Merge(rs) }

// rangesOf turns a per-slot predicate into sorted maximal ranges.
func rangesOf(in func(slot int) bool) []SlotRange {
	var out []SlotRange
	for s := 0; s < TotalSlots; s++ {
		if !in(s) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == s-1 {
			out[n-1].End = s
			continue
		}
		out = append(out, SlotRange{Start: s, End: s})
	}
	return out
}

// evenCounts splits TotalSlots over n shards: the first TotalSlots mod n
// shards get one slot more than the rest.
func evenCounts(n int) []int {
	if n <= 0 {
		return nil
	}
	counts := make([]int, n)
	for i := range counts {
		counts[i] = TotalSlots / n
		if i < TotalSlots%n {
			counts[i]++
		}
	}
	return counts
}

// EvenPlan gives each of n shard positions one contiguous range, in order,
// sized by evenCounts.
func EvenPlan(n int) []SlotRange {
	if n <= 0 {
		return nil
	}
	counts := evenCounts(n)
	plan := make([]SlotRange, len(counts))
	start := 0
	for i, c := range counts {
		plan[i] = SlotRange{Start: start, End: start + c - 1}
		start += c
	}
	return plan
}

// BalanceTargets decides how many slots each existing shard should end up
// with when the cluster is to have `shards` shards. counts maps a shard key
// (the shard index) to the slots it holds now.
//
// With more existing shards than wanted, the shards holding the most slots
// are kept (ties: lower key) and the rest get 0, so the fewest slots move.
// Kept shards take evenCounts(shards) in ascending key order; with fewer
// existing shards than wanted, the remaining shares belong to shards not
// created yet.
func BalanceTargets(counts map[int]int, shards int) map[int]int {
	keys := slices.Sorted(maps.Keys(counts))
	keep := slices.Clone(keys)
	if len(keep) > shards {
		slices.SortStableFunc(keep, func(a, b int) int { return counts[b] - counts[a] })
		keep = keep[:max(shards, 0)]
		slices.Sort(keep)
	}
	even := evenCounts(shards)
	targets := make(map[int]int, len(keys))
	for _, k := range keys {
		targets[k] = 0
	}
	for i, k := range keep {
		targets[k] = even[i]
	}
	return targets
}

// ShardSlots is one shard's input to nextMove.
type ShardSlots struct {
	Key    int
	Slots  []SlotRange
	Target int
	// CanReceive: the shard may be the destination of a move now.
	CanReceive bool
}

// move is one batch of slots to migrate between two shards.
type move struct {
	From  int
	To    int
	Slots SlotRange
}

// nextMove picks the next batch of at most batch slots that brings the
// shards closer to their targets. A shard being drained (target 0) is
// emptied first, the one with the fewest slots before the others, so it can
// be retired as early as possible; otherwise slots go from the shard with
// the largest surplus. The destination is the receivable shard with the
// largest deficit. Ties go to the lower key, except among drained shards,
// where the higher key goes first. The batch is one contiguous range taken
// from the top of the source's slots, keeping what remains contiguous.
func nextMove(shards []ShardSlots, batch int) (move, bool) {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	sorted := slices.Clone(shards)
	slices.SortFunc(sorted, func(a, b ShardSlots) int { return a.Key - b.Key })

	var src *ShardSlots
	for i := range sorted {
		s := &sorted[i]
		n := CountSlots(s.Slots)
		if s.Target != 0 || n == 0 {
			continue
		}
		if src == nil || n <= CountSlots(src.Slots) {
			src = s
		}
	}
	if src == nil {
		best := 0
		for i := range sorted {
			s := &sorted[i]
			if surplus := CountSlots(s.Slots) - s.Target; surplus > best {
				best, src = surplus, s
			}
		}
	}
	if src == nil {
		return move{}, false
	}
	var dst *ShardSlots
	best := 0
	for i := range sorted {
		s := &sorted[i]
		if s.Key == src.Key || !s.CanReceive {
			continue
		}
		if deficit := s.Target - CountSlots(s.Slots); deficit > best {
			best, dst = deficit, s
		}
	}
	if dst == nil {
		return move{}, false
	}
	n := min(batch, CountSlots(src.Slots)-src.Target, best)
	owned := NormalizeRanges(src.Slots)
	top := owned[len(owned)-1]
	r := SlotRange{Start: max(top.Start, top.End-n+1), End: top.End}
	return move{From: src.Key, To: dst.Key, Slots: r}, true
}

// transfer is everything one source gives one target in a wave.
type transfer struct {
	From  int
	To    int
	Slots []SlotRange
}

// PlanTransfers plans a whole rebalance as nextMove would walk it with no
// batch limit: one transfer per source and target pair, all of them in one
// wave. Valkey runs several CLUSTER MIGRATESLOTS jobs of one source at
// once, so a source that gives to many targets (a shard drained on
// scale-in, one shard spread over fifteen new ones) starts every share
// together instead of one target per wave. No slot appears in two
// transfers. Transfers are ordered by source, then target.
func PlanTransfers(shards []ShardSlots) []transfer {
	work := make([]ShardSlots, len(shards))
	for i, s := range shards {
		work[i] = s
		work[i].Slots = NormalizeRanges(s.Slots)
	}
	byKey := map[int]*ShardSlots{}
	for i := range work {
		byKey[work[i].Key] = &work[i]
	}
	type pair struct{ from, to int }
	plan := map[pair]*transfer{}
	for {
		mv, ok := nextMove(work, TotalSlots)
		if !ok {
			break
		}
		src, dst := byKey[mv.From], byKey[mv.To]
		k := pair{mv.From, mv.To}
		if plan[k] == nil {
			plan[k] = &transfer{From: mv.From, To: mv.To}
		}
		t := plan[k]
		t.Slots = NormalizeRanges(append(t.Slots, mv.Slots))
		src.Slots = removeRange(src.Slots, mv.Slots)
		dst.Slots = NormalizeRanges(append(dst.Slots, mv.Slots))
	}
	out := make([]transfer, 0, len(plan))
	for _, t := range plan {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b transfer) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	return out
}

// TopSlots is the highest n slots of rs (all of them when rs holds fewer),
// so what a source keeps stays contiguous at the bottom.
func TopSlots(rs []SlotRange, n int) []SlotRange {
	rs = NormalizeRanges(rs)
	var out []SlotRange
	for i := len(rs) - 1; i >= 0 && n > 0; i-- {
		r := rs[i]
		if size := r.End - r.Start + 1; size > n {
			r.Start = r.End - n + 1
		}
		n -= r.End - r.Start + 1
		out = append(out, r)
	}
	return NormalizeRanges(out)
}

// removeRange is rs without the slots of r.
func removeRange(rs []SlotRange, r SlotRange) []SlotRange {
	var out []SlotRange
	for _, x := range rs {
		if x.End < r.Start || x.Start > r.End {
			out = append(out, x)
			continue
		}
		if x.Start < r.Start {
			out = append(out, SlotRange{Start: x.Start, End: r.Start - 1})
		}
		if x.End > r.End {
			out = append(out, SlotRange{Start: r.End + 1, End: x.End})
		}
	}
	return out
}
