package valkey

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SlotCount is the number of hash slots in a Valkey cluster.
const SlotCount = 16384

// MaxSlot is the highest valid hash slot.
const MaxSlot = SlotCount - 1

// SlotRange is an inclusive range of hash slots.
type SlotRange struct {
	Start int
	End   int
}

// count returns how many slots r covers.
func (r SlotRange) count() int { return r.End - r.Start + 1 }

// Contains reports whether slot lies in r.
func (r SlotRange) Contains(slot int) bool { return slot >= r.Start && slot <= r.End }

// String formats r the way CLUSTER NODES does: "0-5460", or "42" for a
// single slot.
func (r SlotRange) String() string {
	if r.Start == r.End {
		return strconv.Itoa(r.Start)
	}
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// validate checks that r lies inside 0..MaxSlot and is not reversed.
func (r SlotRange) validate() error {
	if r.Start < 0 || r.End > MaxSlot || r.Start > r.End {
		return fmt.Errorf("invalid slot range %d-%d: want 0 <= start <= end <= %d", r.Start, r.End, MaxSlot)
	}
	return nil
}

// parseSlotRange parses "start-end" or a single slot "n".
func parseSlotRange(s string) (SlotRange, error) {
	startText, endText, isRange := strings.Cut(s, "-")
	if !isRange {
		endText = startText
	}
	start, err := strconv.Atoi(startText)
	if err != nil {
		return SlotRange{}, fmt.Errorf("parsing slot range %q: %w", s, err)
	}
	end, err := strconv.Atoi(endText)
	if err != nil {
		return SlotRange{}, fmt.Errorf("parsing slot range %q: %w", s, err)
	}
	r := SlotRange{Start: start, End: end}
	if err := r.validate(); err != nil {
		return SlotRange{}, err
	}
	return r, nil
}

// ParseSlotRanges parses ranges separated by commas and/or whitespace,
// e.g. "0-5460,10000-16383" or "0-10 20-29". The result is kept in input
// order; use mergeSlotRanges to normalise it.
func ParseSlotRanges(s string) ([]SlotRange, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	out := make([]SlotRange, 0, len(fields))
	for _, f := range fields {
		r, err := parseSlotRange(f)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// mergeSlotRanges returns the ranges sorted, with overlapping and adjacent
// ranges joined. The input is not modified.
func mergeSlotRanges(ranges []SlotRange) []SlotRange {
	if len(ranges) == 0 {
		return nil
	}
	sorted := slices.Clone(ranges)
	slices.SortFunc(sorted, func(a, b SlotRange) int { return a.Start - b.Start })
	out := []SlotRange{sorted[0]}
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

// CountSlots returns how many distinct slots the ranges cover; overlaps
// are counted once.
func CountSlots(ranges []SlotRange) int {
	n := 0
	for _, r := range mergeSlotRanges(ranges) {
		n += r.count()
	}
	return n
}

// formatSlotRanges formats ranges as a comma-separated list after merging,
// e.g. "0-5460,10000-16383"; "" for none.
func formatSlotRanges(ranges []SlotRange) string {
	merged := mergeSlotRanges(ranges)
	parts := make([]string, len(merged))
	for i, r := range merged {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// missingSlots returns the slots in 0..MaxSlot that no range covers, as
// merged ranges. An empty result means full coverage.
func missingSlots(ranges []SlotRange) []SlotRange {
	var out []SlotRange
	next := 0
	for _, r := range mergeSlotRanges(ranges) {
		if r.Start > next {
			out = append(out, SlotRange{Start: next, End: r.Start - 1})
		}
		next = max(next, r.End+1)
	}
	if next <= MaxSlot {
		out = append(out, SlotRange{Start: next, End: MaxSlot})
	}
	return out
}

// KeySlot is the hash slot of a key, as CLUSTER KEYSLOT computes it: the
// CRC16 (XMODEM) of the key, or of its {hash tag} when it has a non-empty one.
func KeySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % SlotCount
}
