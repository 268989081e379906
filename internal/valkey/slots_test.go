package valkey

import (
	"reflect"
	"testing"
)

func TestParseSlotRange(t *testing.T) {
	tests := []struct {
		in      string
		want    SlotRange
		wantErr bool
	}{
		{in: "0-5460", want: SlotRange{Start: 0, End: 5460}},
		{in: "42", want: SlotRange{Start: 42, End: 42}},
		{in: "16383", want: SlotRange{Start: 16383, End: 16383}},
		{in: "0-16383", want: SlotRange{Start: 0, End: 16383}},
		{in: "16384", wantErr: true},
		{in: "10-5", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "a-b", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		got, err := parseSlotRange(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseSlotRange(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if got != tc.want {
			t.Errorf("parseSlotRange(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseSlotRanges(t *testing.T) {
	tests := []struct {
		in      string
		want    []SlotRange
		wantErr bool
	}{
		{in: "0-5460,10000-16383", want: []SlotRange{{Start: 0, End: 5460}, {Start: 10000, End: 16383}}},
		// CLUSTER GETSLOTMIGRATIONS separates ranges with spaces.
		{in: "0-10 20-29", want: []SlotRange{{Start: 0, End: 10}, {Start: 20, End: 29}}},
		{in: "7", want: []SlotRange{{Start: 7, End: 7}}},
		{in: "", want: []SlotRange{}},
		{in: "0-10,x", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseSlotRanges(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseSlotRanges(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSlotRanges(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSlotRangeHelpers(t *testing.T) {
	tests := []struct {
		name    string
		in      []SlotRange
		merged  []SlotRange
		count   int
		format  string
		missing []SlotRange
	}{
		{
			name:    "none",
			in:      nil,
			merged:  nil,
			count:   0,
			format:  "",
			missing: []SlotRange{{Start: 0, End: MaxSlot}},
		},
		{
			name:    "full coverage in three shards",
			in:      []SlotRange{{Start: 10923, End: 16383}, {Start: 0, End: 5460}, {Start: 5461, End: 10922}},
			merged:  []SlotRange{{Start: 0, End: MaxSlot}},
			count:   SlotCount,
			format:  "0-16383",
			missing: nil,
		},
		{
			name:    "overlap counted once",
			in:      []SlotRange{{Start: 0, End: 100}, {Start: 50, End: 150}, {Start: 150, End: 150}},
			merged:  []SlotRange{{Start: 0, End: 150}},
			count:   151,
			format:  "0-150",
			missing: []SlotRange{{Start: 151, End: MaxSlot}},
		},
		{
			name:    "gaps and single slots",
			in:      []SlotRange{{Start: 12182, End: 12182}, {Start: 0, End: 5460}, {Start: 12184, End: MaxSlot}},
			merged:  []SlotRange{{Start: 0, End: 5460}, {Start: 12182, End: 12182}, {Start: 12184, End: MaxSlot}},
			count:   5461 + 1 + (MaxSlot - 12184 + 1),
			format:  "0-5460,12182,12184-16383",
			missing: []SlotRange{{Start: 5461, End: 12181}, {Start: 12183, End: 12183}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergeSlotRanges(tc.in); !reflect.DeepEqual(got, tc.merged) {
				t.Errorf("mergeSlotRanges = %v, want %v", got, tc.merged)
			}
			if got := CountSlots(tc.in); got != tc.count {
				t.Errorf("CountSlots = %d, want %d", got, tc.count)
			}
			if got := formatSlotRanges(tc.in); got != tc.format {
				t.Errorf("formatSlotRanges = %q, want %q", got, tc.format)
			}
			if got := missingSlots(tc.in); !reflect.DeepEqual(got, tc.missing) {
				t.Errorf("missingSlots = %v, want %v", got, tc.missing)
			}
			// Formatting then parsing gives the merged ranges back.
			back, err := ParseSlotRanges(tc.format)
			if err != nil || (len(tc.merged) > 0 && !reflect.DeepEqual(back, tc.merged)) {
				t.Errorf("ParseSlotRanges(formatSlotRanges) = %v, %v", back, err)
			}
		})
	}
}

func TestMergeSlotRangesLeavesInputAlone(t *testing.T) {
	in := []SlotRange{{Start: 10, End: 20}, {Start: 0, End: 5}}
	mergeSlotRanges(in)
	if !reflect.DeepEqual(in, []SlotRange{{Start: 10, End: 20}, {Start: 0, End: 5}}) {
		t.Fatalf("input modified: %v", in)
	}
}

func TestKeySlot(t *testing.T) {
	// As CLUSTER KEYSLOT answers them.
	for _, tt := range []struct {
		key  string
		slot int
	}{
		{"hello", 866},
		{"123456789", 12739},
		{"{user1000}.following", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},
		{"foo{{bar}}zap", 4015},
		{"foo{bar}{zap}", 5061},
		{"", 0},
	} {
		if got := KeySlot(tt.key); got != tt.slot {
			t.Errorf("KeySlot(%q) = %d, want %d", tt.key, got, tt.slot)
		}
	}
}
