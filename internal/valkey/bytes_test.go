package valkey

import "testing"

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "0", want: 0},
		{in: "20224", want: 20224},
		{in: "9223372036854775807", want: 9223372036854775807},
		// used_memory_dataset after a mass delete: -10760 printed unsigned.
		{in: "18446744073709540856", want: 0},
		{in: "-1", wantErr: true},
		{in: "12k", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := parseBytes(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
