package metering

import (
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// The documented source order, first match wins, then the floor.
func TestFigure(t *testing.T) {
	tests := []struct {
		name   string
		node   Node
		bytes  int64
		source valkeyv1.MeteringSource
	}{
		{"container memory wins over everything", Node{Memory: "1Gi", MaxMemory: "64mb", PeakUsedBytes: 5 << 30}, 1 << 30, valkeyv1.MeteringSourceReserved},
		{"maxmemory without a container limit", Node{MaxMemory: "512mb", PeakUsedBytes: 5 << 30}, 512 << 20, valkeyv1.MeteringSourceMaxMemory},
		{"maxmemory in bytes, as derived", Node{MaxMemory: "858993459"}, 858993459, valkeyv1.MeteringSourceMaxMemory},
		{"neither: the peak observed", Node{PeakUsedBytes: 300_000_000}, 300_000_000, valkeyv1.MeteringSourceObserved},
		{"nothing measured yet: the floor", Node{}, floorBytes, valkeyv1.MeteringSourceFloor},
		{"a reservation under 100 MB: the floor", Node{Memory: "64Mi"}, floorBytes, valkeyv1.MeteringSourceFloor},
		{"maxmemory under 100 MB: the floor", Node{MaxMemory: "64mb"}, floorBytes, valkeyv1.MeteringSourceFloor},
		{"a small observed peak: the floor", Node{PeakUsedBytes: 2_000_000}, floorBytes, valkeyv1.MeteringSourceFloor},
		{"exactly the floor is not raised", Node{MaxMemory: "100m"}, floorBytes, valkeyv1.MeteringSourceMaxMemory},
		{"an unreadable maxmemory counts as unset", Node{MaxMemory: "lots", PeakUsedBytes: 200_000_000}, 200_000_000, valkeyv1.MeteringSourceObserved},
		{"maxmemory 0 (unlimited) counts as unset", Node{MaxMemory: "0", PeakUsedBytes: 200_000_000}, 200_000_000, valkeyv1.MeteringSourceObserved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bytes, source := Figure(tt.node)
			if bytes != tt.bytes || source != tt.source {
				t.Errorf("Figure = %d %s, want %d %s", bytes, source, tt.bytes, tt.source)
			}
		})
	}
}

func TestNodeFromSpec(t *testing.T) {
	n := &valkeyv1.ValkeyNode{
		Spec: valkeyv1.ValkeyNodeSpec{Memory: "2Gi", ValkeySettings: map[string]string{"MaxMemory": "1gb"}},
		Status: valkeyv1.ValkeyNodeStatus{Utilisation: &valkeyv1.NodeUtilisation{
			PeakUsedMemoryBytes: 10,
			Samples:             []valkeyv1.UtilisationSample{{Time: metav1.Now(), UsedMemoryBytes: 40}},
		}},
	}
	if got := NodeFromSpec(n); got != (Node{Memory: "2Gi", MaxMemory: "1gb", PeakUsedBytes: 40}) {
		t.Errorf("NodeFromSpec = %+v", got)
	}
}

func TestAdvance(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := Meter{}.Advance(t0, 2_000_000_000) // 2 GB from t0: starts the clock only
	if m.MegabyteSeconds != 0 || !m.Last.Equal(t0) {
		t.Fatalf("first sample: %+v", m)
	}
	m = m.Advance(t0.Add(time.Hour), 1_000_000_000) // 2 GB for an hour
	if got := GBHours(m.MegabyteSeconds); got != "2.000000" {
		t.Fatalf("after an hour at 2 GB: %s GB-hours (%+v)", got, m)
	}
	m = m.Advance(t0.Add(90*time.Minute), 1_000_000_000) // then 1 GB for half an hour
	if got := GBHours(m.MegabyteSeconds); got != "2.500000" {
		t.Fatalf("then half an hour at 1 GB: %s GB-hours", got)
	}
	back := m.Advance(t0, 5_000_000_000)
	if back.MegabyteSeconds != m.MegabyteSeconds || !back.Last.Equal(m.Last) {
		t.Fatalf("a clock gone backwards billed %+v", back)
	}
}

// Billing is additive: however an interval is cut into samples, the total
// is the same, and it only grows.
func TestAdvanceIsAdditive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 500 {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		bytes := rng.Int64N(4_000_000_000_000) // up to 4 TB
		span := time.Duration(rng.Int64N(int64(400 * 24 * time.Hour))).Truncate(time.Millisecond)
		whole := Meter{}.Advance(t0, bytes).Advance(t0.Add(span), bytes)

		split := Meter{}.Advance(t0, bytes)
		at, prev := t0, int64(0)
		for at.Before(t0.Add(span)) {
			at = at.Add(time.Duration(rng.Int64N(int64(6*time.Hour))) + time.Nanosecond)
			if at.After(t0.Add(span)) {
				at = t0.Add(span)
			}
			split = split.Advance(at, bytes)
			if split.MegabyteSeconds < prev {
				t.Fatalf("the meter went down: %d after %d", split.MegabyteSeconds, prev)
			}
			prev = split.MegabyteSeconds
		}
		if split.MegabyteSeconds != whole.MegabyteSeconds || split.RemainderByteMillis != whole.RemainderByteMillis {
			t.Fatalf("%d bytes over %s: split %d+%d, whole %d+%d", bytes, span,
				split.MegabyteSeconds, split.RemainderByteMillis, whole.MegabyteSeconds, whole.RemainderByteMillis)
		}
	}
}

func TestGBHours(t *testing.T) {
	for in, want := range map[int64]string{0: "0.000000", 3_600_000: "1.000000", 1: "0.000000", 3_600: "0.001000", 7_200_001: "2.000000"} {
		if got := GBHours(in); got != want {
			t.Errorf("GBHours(%d) = %s, want %s", in, got, want)
		}
	}
}

func TestSampleDue(t *testing.T) {
	last := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		last time.Time
		now  time.Time
		due  bool
		wait time.Duration
	}{
		{"never sampled", time.Time{}, last, true, 0},
		{"brought back by its own write", last, last.Add(time.Second), false, 59 * time.Second},
		{"exactly due", last, last.Add(time.Minute), true, 0},
		{"overdue after a restart", last, last.Add(time.Hour), true, 0},
		{"a clock behind the record", last, last.Add(-time.Second), false, 61 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, wait := SampleDue(tt.last, tt.now, time.Minute)
			if due != tt.due || wait != tt.wait {
				t.Fatalf("SampleDue = %v, %s; want %v, %s", due, wait, tt.due, tt.wait)
			}
		})
	}
}

func TestSampleNow(t *testing.T) {
	last := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const gb = int64(1e9)
	tests := []struct {
		name            string
		now             time.Time
		billed, current int64
		sample          bool
		wait            time.Duration
	}{
		{"figure unchanged, not due", last.Add(time.Minute), gb, gb, false, 4 * time.Minute},
		{"figure unchanged, due", last.Add(5 * time.Minute), gb, gb, true, 0},
		{"a node added before the tick", last.Add(time.Minute), gb, 2 * gb, true, 0},
		{"a node removed before the tick", last.Add(time.Second), 2 * gb, gb, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sample, wait := SampleNow(last, tt.now, 5*time.Minute, tt.billed, tt.current)
			if sample != tt.sample || wait != tt.wait {
				t.Fatalf("SampleNow = %v, %s; want %v, %s", sample, wait, tt.sample, tt.wait)
			}
		})
	}
}

// A change sampled at once bills the time before it at the old figure and
// the time after at the new one: the same total as samples on a tick that
// happened to fall on the change.
func TestSampleAtChangeBillsEachSpanAtItsFigure(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const gb = int64(1e9)
	m := Meter{}.Advance(start, gb)
	m = m.Advance(start.Add(90*time.Second), 3*gb) // a change seen 90 s in
	m = m.Advance(start.Add(5*time.Minute), 3*gb)  // the next tick
	want := int64(90*1000 + 210*3000)              // megabyte-seconds
	if m.MegabyteSeconds != want {
		t.Fatalf("billed %d MB-s, want %d", m.MegabyteSeconds, want)
	}
}
