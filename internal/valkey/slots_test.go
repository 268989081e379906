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
		{in: "0-5460", want: SlotRange{0, 5460}},
		{in: "42", want: SlotRange{42, 42}},
		{in: "16383", want: SlotRange{16383, 16383}},
		{in: "0-16383", want: SlotRange{0, 16383}},
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
		{in: "0-5460,10000-16383", want: []SlotRange{{0, 5460}, {10000, 16383}}},
		// CLUSTER GETSLOTMIGRATIONS separates ranges with spaces.
		{in: "0-10 20-29", want: []SlotRange{{0, 10}, {20, 29}}},
		{in: "7", want: []SlotRange{{7, 7}}},
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
			missing: []SlotRange{{0, MaxSlot}},
		},
		{
			name:    "full coverage in three shards",
			in:      []SlotRange{{10923, 16383}, {0, 5460}, {5461, 10922}},
			merged:  []SlotRange{{0, MaxSlot}},
			count:   SlotCount,
			format:  "0-16383",
			missing: nil,
		},
		{
			name:    "overlap counted once",
			in:      []SlotRange{{0, 100}, {50, 150}, {150, 150}},
			merged:  []SlotRange{{0, 150}},
			count:   151,
			format:  "0-150",
			missing: []SlotRange{{151, MaxSlot}},
		},
		{
			name:    "gaps and single slots",
			in:      []SlotRange{{12182, 12182}, {0, 5460}, {12184, MaxSlot}},
			merged:  []SlotRange{{0, 5460}, {12182, 12182}, {12184, MaxSlot}},
			count:   5461 + 1 + (MaxSlot - 12184 + 1),
			format:  "0-5460,12182,12184-16383",
			missing: []SlotRange{{5461, 12181}, {12183, 12183}},
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
	in := []SlotRange{{10, 20}, {0, 5}}
	mergeSlotRanges(in)
	if !reflect.DeepEqual(in, []SlotRange{{10, 20}, {0, 5}}) {
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
