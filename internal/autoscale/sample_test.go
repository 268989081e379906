package autoscale

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func approx(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s is absent, want %v", what, want)
	}
	if math.Abs(*got-want) > 1e-9 {
		t.Fatalf("%s = %v, want %v", what, *got, want)
	}
}

func absent(t *testing.T, what string, got *float64) {
	t.Helper()
	if got != nil {
		t.Fatalf("%s = %v, want absent", what, *got)
	}
}

func TestComputeMemoryPrefersMaxmemory(t *testing.T) {
	s := Compute(nil, Reading{Time: t0, UsedMemory: 842, MaxMemory: 1000}, Limits{MemoryBytes: 4000})
	approx(t, "memoryPercent", s.MemoryPercent, 84.2)
	if s.UsedMemoryBytes != 842 {
		t.Fatalf("usedMemoryBytes = %d", s.UsedMemoryBytes)
	}
}

func TestComputeMemoryFallsBackToLimit(t *testing.T) {
	s := Compute(nil, Reading{Time: t0, UsedMemory: 1000}, Limits{MemoryBytes: 4000})
	approx(t, "memoryPercent", s.MemoryPercent, 25)
}

func TestComputeMemoryWithoutDenominatorIsAbsent(t *testing.T) {
	s := Compute(nil, Reading{Time: t0, UsedMemory: 1000}, Limits{})
	absent(t, "memoryPercent", s.MemoryPercent)
}

func TestComputeFirstReadingHasNoRates(t *testing.T) {
	s := Compute(nil, Reading{Time: t0, CPUSeconds: 5, NetBytes: 100}, Limits{CPUMillis: 500})
	absent(t, "cpuPercent", s.CPUPercent)
	absent(t, "bandwidthMbps", s.BandwidthMbps)
}

func TestComputeCPUAgainstLimit(t *testing.T) {
	prev := Reading{Time: t0, RunID: "a", CPUSeconds: 10}
	// 6 CPU-seconds in 30 s is 0.2 cores: 40% of a 500m limit.
	cur := Reading{Time: t0.Add(30 * time.Second), RunID: "a", CPUSeconds: 16}
	approx(t, "cpuPercent", Compute(&prev, cur, Limits{CPUMillis: 500}).CPUPercent, 40)
	absent(t, "cpuPercent without a limit", Compute(&prev, cur, Limits{}).CPUPercent)
}

func TestComputeBandwidth(t *testing.T) {
	prev := Reading{Time: t0, RunID: "a", NetBytes: 1_000_000}
	// 75 MB in 30 s: 600 Mbit in 30 s = 20 Mbit/s.
	cur := Reading{Time: t0.Add(30 * time.Second), RunID: "a", NetBytes: 76_000_000}
	approx(t, "bandwidthMbps", Compute(&prev, cur, Limits{}).BandwidthMbps, 20)
}

func TestComputeRestartedProcessHasNoRates(t *testing.T) {
	prev := Reading{Time: t0, RunID: "a", CPUSeconds: 100, NetBytes: 1e9}
	cur := Reading{Time: t0.Add(30 * time.Second), RunID: "b", CPUSeconds: 1, NetBytes: 10}
	s := Compute(&prev, cur, Limits{CPUMillis: 1000})
	absent(t, "cpuPercent", s.CPUPercent)
	absent(t, "bandwidthMbps", s.BandwidthMbps)
}

func TestComputeResetStatsSkipsBandwidth(t *testing.T) {
	prev := Reading{Time: t0, RunID: "a", NetBytes: 1e9}
	cur := Reading{Time: t0.Add(30 * time.Second), RunID: "a", NetBytes: 10}
	absent(t, "bandwidthMbps", Compute(&prev, cur, Limits{}).BandwidthMbps)
}

func TestRetain(t *testing.T) {
	at := func(sec int) Sample { return Sample{Time: t0.Add(time.Duration(sec) * time.Second)} }
	times := func(ss []Sample) []int {
		var out []int
		for _, s := range ss {
			out = append(out, int(s.Time.Sub(t0).Seconds()))
		}
		return out
	}
	tests := []struct {
		name    string
		history []Sample
		next    Sample
		keep    time.Duration
		max     int
		want    []int
	}{
		{"first", nil, at(0), time.Minute, 10, []int{0}},
		{"keeps one sample older than the window", []Sample{at(0), at(30), at(60), at(90)}, at(120), time.Minute, 10, []int{60, 90, 120}},
		{"keeps the one before the window start", []Sample{at(0), at(30), at(50)}, at(100), time.Minute, 10, []int{30, 50, 100}},
		{"bounded", []Sample{at(0), at(1), at(2), at(3)}, at(4), time.Hour, 3, []int{2, 3, 4}},
		{"clock went back", []Sample{at(0), at(30)}, at(20), time.Hour, 10, []int{0, 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := times(Retain(tt.history, tt.next, tt.keep, tt.max))
			if len(got) != len(tt.want) {
				t.Fatalf("kept %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("kept %v, want %v", got, tt.want)
				}
			}
		})
	}
}
