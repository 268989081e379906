package valkey

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gomomento/valkey-operator/internal/slotrange"
)

// SlotCount is the number of hash slots in a Valkey cluster.
const SlotCount = 16384

// MaxSlot is the highest valid hash slot.
const MaxSlot = slotrange.Max

// SlotRange is an inclusive range of hash slots, the planner's type too.
type SlotRange = slotrange.Range

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
	if err := r.Validate(); err != nil {
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
func mergeSlotRanges(ranges []SlotRange) []SlotRange { return slotrange.Merge(ranges) }

// CountSlots returns how many distinct slots the ranges cover; overlaps
// are counted once.
func CountSlots(ranges []SlotRange) int {
	n := 0
	for _, r := range mergeSlotRanges(ranges) {
		n += r.Count()
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
