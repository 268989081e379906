// Package slotrange is the inclusive range of hash slots that the planner
// (internal/topology) and the Valkey client (internal/valkey) both speak
// in, so a range passes between them as it is.
package slotrange

import (
	"fmt"
	"slices"
	"strconv"
)

// Max is the highest hash slot of a Valkey cluster.
const Max = 16383

// Range is an inclusive range of hash slots.
type Range struct {
	Start int
	End   int
}

// Count is the number of slots in r.
func (r Range) Count() int { return r.End - r.Start + 1 }

// Contains reports whether slot lies in r.
func (r Range) Contains(slot int) bool { return slot >= r.Start && slot <= r.End }

// String formats r the way CLUSTER NODES does: "0-5460", or "42" for a
// single slot.
func (r Range) String() string {
	if r.Start == r.End {
		return strconv.Itoa(r.Start)
	}
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// Validate checks that r lies inside 0..Max and is not reversed.
func (r Range) Validate() error {
	if r.Start < 0 || r.End > Max || r.Start > r.End {
		return fmt.Errorf("invalid slot range %d-%d: want 0 <= start <= end <= %d", r.Start, r.End, Max)
	}
	return nil
}

// Merge returns the ranges sorted, with overlapping and adjacent ranges
// joined. The input is not modified.
func Merge(ranges []Range) []Range {
	if len(ranges) == 0 {
		return nil
	}
	sorted := slices.Clone(ranges)
	slices.SortFunc(sorted, func(a, b Range) int { return a.Start - b.Start })
	out := []Range{sorted[0]}
	for _, r := range sorted[1:] {
		last := &out[len(out)-1]
		if r.Start <= last.End+1 {
			last.End = max(last.End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
