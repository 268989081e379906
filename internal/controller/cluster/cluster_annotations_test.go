package cluster

import (
	"maps"
	"testing"
)

func TestMissingAnnotations(t *testing.T) {
	cases := []struct {
		name       string
		have, want map[string]string
		expect     map[string]string
	}{
		{name: "nothing wanted", have: map[string]string{"a": "1"}, want: nil, expect: nil},
		{name: "all present", have: map[string]string{"a": "1", "other": "x"}, want: map[string]string{"a": "1"}, expect: nil},
		{name: "added key", have: nil, want: map[string]string{"a": "1"}, expect: map[string]string{"a": "1"}},
		{name: "changed value", have: map[string]string{"a": "1"}, want: map[string]string{"a": "2"}, expect: map[string]string{"a": "2"}},
		{name: "others kept out of the patch", have: map[string]string{"x": "9"}, want: map[string]string{"a": "1"}, expect: map[string]string{"a": "1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := missingAnnotations(tc.have, tc.want); !maps.Equal(got, tc.expect) {
				t.Fatalf("missingAnnotations = %v, want %v", got, tc.expect)
			}
		})
	}
}
