package slotrange

import (
	"slices"
	"testing"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		in   []Range
		want []Range
	}{
		{"none", nil, nil},
		{"sorted and joined", []Range{{10, 20}, {0, 4}, {5, 9}, {30, 30}}, []Range{{0, 20}, {30, 30}}},
		{"overlaps", []Range{{0, 10}, {5, 7}, {8, 12}}, []Range{{0, 12}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := Merge(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("Merge(%v) = %v, want %v", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("Merge modified its input: %v", tt.in)
			}
		})
	}
}

func TestRange(t *testing.T) {
	if got := (Range{0, 5460}).String(); got != "0-5460" {
		t.Errorf("String = %q", got)
	}
	if got := (Range{42, 42}).String(); got != "42" {
		t.Errorf("String = %q", got)
	}
	if (Range{0, 9}).Count() != 10 || !(Range{0, 9}).Contains(9) || (Range{0, 9}).Contains(10) {
		t.Error("Count or Contains wrong")
	}
	for _, bad := range []Range{{-1, 3}, {5, 4}, {0, Max + 1}} {
		if bad.Validate() == nil {
			t.Errorf("%v validated", bad)
		}
	}
	if err := (Range{0, Max}).Validate(); err != nil {
		t.Error(err)
	}
}
