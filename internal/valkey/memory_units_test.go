package valkey

import "testing"

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "64mb": 64 << 20, "64MB": 64 << 20, "1gb": 1 << 30,
		"100m": 100_000_000, "2g": 2_000_000_000, "512k": 512_000, "512kb": 512 << 10, " 7 ": 7, "10b": 10,
	} {
		got, err := ParseMemory(in)
		if err != nil || got != want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "mb", "-1", "1.5gb", "lots", "99999999999999999gb"} {
		if got, err := ParseMemory(bad); err == nil {
			t.Errorf("ParseMemory(%q) = %d, want an error", bad, got)
		}
	}
}
