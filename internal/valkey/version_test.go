package valkey

import "testing"

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{in: "8.0.1", want: Version{8, 0, 1}},
		{in: "9.0.0", want: Version{9, 0, 0}},
		{in: " 10.12.3 ", want: Version{10, 12, 3}},
		{in: "8.0", wantErr: true},
		{in: "8.0.1-rc1", wantErr: true},
		{in: "v8.0.1", wantErr: true},
		{in: "8.-1.0", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseVersion(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseVersion(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestVersionCompare(t *testing.T) {
	tests := []struct {
		a, b Version
		want int
	}{
		{Version{8, 0, 1}, Version{8, 0, 1}, 0},
		{Version{8, 0, 1}, Version{9, 0, 0}, -1},
		{Version{8, 1, 0}, Version{8, 0, 9}, 1},
		{Version{8, 0, 2}, Version{8, 0, 10}, -1},
	}
	for _, tc := range tests {
		if got := tc.a.Compare(tc.b); got != tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := tc.a.AtLeast(tc.b); got != (tc.want >= 0) {
			t.Errorf("%s.AtLeast(%s) = %v", tc.a, tc.b, got)
		}
	}
	if (Version{8, 0, 1}).AtLeast(atomicSlotMigrationVersion) || !(Version{9, 0, 0}).AtLeast(atomicSlotMigrationVersion) {
		t.Error("atomicSlotMigrationVersion is not 9.0.0")
	}
}

func TestACLLoadCrashesReplicas(t *testing.T) {
	for _, tt := range []struct {
		v    Version
		want bool
	}{
		{Version{8, 0, 0}, true},
		{Version{8, 0, 1}, true},
		{Version{8, 0, 2}, true},
		{Version{8, 0, 3}, false},
		{Version{8, 1, 0}, false},
		{Version{9, 0, 0}, false},
		{Version{9, 1, 2}, false},
	} {
		if got := ACLLoadCrashesReplicas(tt.v); got != tt.want {
			t.Errorf("ACLLoadCrashesReplicas(%s) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
