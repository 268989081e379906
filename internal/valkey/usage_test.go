package valkey

import (
	"os"
	"testing"
)

func TestParseUsageInfo(t *testing.T) {
	raw, err := os.ReadFile("testdata/info-usage-8.0.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUsageInfo(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := UsageInfo{
		RunID:          "65d107b6958596e7114e91ae675dd2da97e5954a",
		UsedMemory:     949520,
		UsedMemoryPeak: 949520,
		MaxMemory:      16777216,
		NetBytes:       58,
	}
	cpu := u.CPUSeconds
	u.CPUSeconds = 0
	if u != want {
		t.Fatalf("parseUsageInfo = %+v, want %+v", u, want)
	}
	if cpu < 0.0458 || cpu > 0.0459 {
		t.Fatalf("CPUSeconds = %v, want used_cpu_sys+used_cpu_user = 0.045871", cpu)
	}
}

func TestParseUsageInfoRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"no used_memory":   "# Memory\r\nmaxmemory:0\r\n",
		"bad maxmemory":    "# Memory\r\nused_memory:10\r\nmaxmemory:lots\r\n",
		"bad used_cpu_sys": "# Memory\r\nused_memory:10\r\n# CPU\r\nused_cpu_sys:x\r\n",
	} {
		if _, err := parseUsageInfo(text); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
