package e2e

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/bench/record"
)

// bucketWidth is the timeline's resolution.
const bucketWidth = 250 * time.Millisecond

// summarizeLoad computes success, latency percentiles over every request
// (a failed one counts the time to its error), each shard's longest window
// without a successful write, and the timeline.
func summarizeLoad(samples []loadSample, shards int, from, to, disruption time.Time) record.Availability {
	var a record.Availability
	rel := func(t time.Time) float64 { return t.Sub(disruption).Seconds() }
	var lat []float64
	writes := make([][]time.Time, shards)
	buckets := map[int][]loadSample{}
	for _, s := range samples {
		a.Requests++
		if !s.ok {
			a.Failed++
		}
		lat = append(lat, ms(s.latency))
		if s.write && s.ok {
			writes[s.shard] = append(writes[s.shard], s.at)
		}
		i := int(math.Floor(s.at.Sub(disruption).Seconds() / bucketWidth.Seconds()))
		buckets[i] = append(buckets[i], s)
	}
	a.P50Ms, a.P99Ms, a.MaxMs = percentile(lat, 50), percentile(lat, 99), percentile(lat, 100)
	for shard, ws := range writes {
		slices.SortFunc(ws, func(x, y time.Time) int { return x.Compare(y) })
		g := record.ShardGap{Shard: shard, Writes: len(ws)}
		prev := from
		for _, at := range append(ws, to) {
			if d := at.Sub(prev); ms(d) > g.LongestGapMs {
				g.LongestGapMs, g.AtSeconds = ms(d), rel(prev)
			}
			prev = at
		}
		a.Shards = append(a.Shards, g)
	}
	// Every whole bucket the load spanned, empty ones too: a bucket in which
	// no request completed is the outage itself. One only partly spanned
	// would show a false dip.
	w := bucketWidth.Seconds()
	first := int(math.Ceil(from.Sub(disruption).Seconds()/w - 1e-9))
	last := int(math.Floor(to.Sub(disruption).Seconds()/w+1e-9)) - 1
	for i := first; i <= last; i++ {
		b := record.Bucket{T: float64(i) * w, ShardWrites: make([]int, shards)}
		var bl []float64
		for _, s := range buckets[i] {
			if s.ok {
				b.OK++
				if s.write {
					b.ShardWrites[s.shard]++
				}
			} else {
				b.Failed++
			}
			bl = append(bl, ms(s.latency))
		}
		b.P99Ms = percentile(bl, 99)
		a.Timeline = append(a.Timeline, b)
	}
	return a
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile is the nearest-rank percentile of xs (p in 0..100).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// The report's gaps and timeline come from the samples alone.
func TestSummarizeLoad(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []loadSample{
		{at: at(0.1), latency: time.Millisecond, shard: 0, write: true, ok: true},
		{at: at(0.2), latency: 3 * time.Millisecond, shard: 1, write: true, ok: true},
		{at: at(0.3), latency: 2 * time.Second, shard: 0, write: true, ok: false},
		{at: at(1.6), latency: 2 * time.Millisecond, shard: 0, write: true, ok: true},
		{at: at(1.7), latency: time.Millisecond, shard: 1, write: false, ok: true},
	}
	a := summarizeLoad(samples, 2, t0, at(2), at(0.5))
	if a.Requests != 5 || a.Failed != 1 {
		t.Errorf("%d requests, %d failed; want 5, 1", a.Requests, a.Failed)
	}
	if a.P50Ms != 2 || a.MaxMs != 2000 {
		t.Errorf("p50 %v ms, max %v ms; want 2, 2000", a.P50Ms, a.MaxMs)
	}
	want := []record.ShardGap{
		{Shard: 0, Writes: 2, LongestGapMs: 1500, AtSeconds: -0.4},
		{Shard: 1, Writes: 1, LongestGapMs: 1800, AtSeconds: -0.3},
	}
	for i, g := range a.Shards {
		if g.Shard != want[i].Shard || g.Writes != want[i].Writes || math.Abs(g.LongestGapMs-want[i].LongestGapMs) > 1e-6 || math.Abs(g.AtSeconds-want[i].AtSeconds) > 1e-9 {
			t.Errorf("shard %d: %+v, want %+v", i, g, want[i])
		}
	}
	// Buckets of 250 ms from the disruption at 0.5 s: the first starts at
	// -0.5 s (t0), the last whole one ends at 1.5 s (2 s).
	if n := len(a.Timeline); n != 8 || a.Timeline[0].T != -0.5 || a.Timeline[7].T != 1.25 {
		t.Fatalf("timeline %+v", a.Timeline)
	}
	if b := a.Timeline[0]; b.OK != 2 || b.Failed != 0 || b.ShardWrites[0] != 1 || b.ShardWrites[1] != 1 {
		t.Errorf("first bucket %+v", b)
	}
	if b := a.Timeline[1]; b.OK != 0 || b.Failed != 1 || b.P99Ms != 2000 {
		t.Errorf("second bucket %+v", b)
	}
	if b := a.Timeline[2]; b.OK != 0 || b.Failed != 0 || b.P99Ms != 0 {
		t.Errorf("an empty bucket %+v", b)
	}
}
