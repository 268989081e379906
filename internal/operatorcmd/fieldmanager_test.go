package operatorcmd

import (
	"strings"
	"testing"
)

func TestFieldManager(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wantErr bool
	}{
		{name: ""},
		{name: "valkey-operator-team-a"},
		{name: "team/a", wantErr: true},
		{name: "team a", wantErr: true},
		{name: strings.Repeat("a", 128)},
		{name: strings.Repeat("a", 129), wantErr: true},
	} {
		if err := checkFieldManager(tc.name); (err != nil) != tc.wantErr {
			t.Errorf("checkFieldManager(%q) = %v, want an error: %v", tc.name, err, tc.wantErr)
		}
	}
	// The apiserver records writes under the User-Agent up to its first
	// slash: the name must come first and whole.
	ua := userAgent("valkey-operator-team-a", "v1.2.3")
	if got, _, _ := strings.Cut(ua, "/"); got != "valkey-operator-team-a" {
		t.Errorf("userAgent = %q: the apiserver would record %q", ua, got)
	}
}
