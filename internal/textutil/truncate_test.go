package textutil

import "testing"

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"empty", "", 5, ""},
		{"shorter than the limit", "abc", 5, "abc"},
		{"exactly the limit", "abcde", 5, "abcde"},
		{"longer than the limit", "abcdefgh", 5, "abcde"},
		{"zero limit", "abc", 0, ""},
		{"limit counts bytes, not characters", "héllo", 3, "h\xc3\xa9"},
		{"a cut inside a character keeps its first bytes", "héllo", 2, "h\xc3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Truncate(tt.s, tt.n); got != tt.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
		})
	}
}
