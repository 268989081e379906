package nodeconn

import (
	"reflect"
	"testing"
)

func TestParsePins(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{" a, ,b,", []string{"a", "b"}},
	} {
		if got := ParsePins(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePins(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
