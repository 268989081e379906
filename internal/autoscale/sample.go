package autoscale

import (
	"time"
)

// Reading is one answer of a node to INFO, stamped with when it was taken.
type Reading struct {
	Time           time.Time
	RunID          string
	UsedMemory     int64
	UsedMemoryPeak int64
	MaxMemory      int64
	CPUSeconds     float64
	NetBytes       int64
}

// Limits are the node's container limits; 0 means none.
type Limits struct {
	MemoryBytes int64
	CPUMillis   int64
}

// Sample is one utilisation sample. A figure that cannot be computed is
// nil, never zero: a missing denominator, or a rate without an earlier
// reading of the same process to take the difference from.
type Sample struct {
	Time            time.Time
	MemoryPercent   *float64
	CPUPercent      *float64
	BandwidthMbps   *float64
	UsedMemoryBytes int64
}

// MemoryDenominator is what memoryPercent divides by: maxmemory, else the
// container memory limit, else 0.
func MemoryDenominator(maxMemory int64, l Limits) int64 {
	if maxMemory > 0 {
		return maxMemory
	}
	return l.MemoryBytes
}

// Compute turns the current reading, and the previous one of the same node
// when there is one, into a sample.
func Compute(prev *Reading, cur Reading, l Limits) Sample {
	s := Sample{Time: cur.Time, UsedMemoryBytes: cur.UsedMemory}
	if d := MemoryDenominator(cur.MaxMemory, l); d > 0 {
		s.MemoryPercent = ptr(100 * float64(cur.UsedMemory) / float64(d))
	}
	if prev == nil || prev.RunID != cur.RunID {
		// A restarted process began its counters again: a difference
		// across the restart means nothing.
		return s
	}
	elapsed := cur.Time.Sub(prev.Time).Seconds()
	if elapsed <= 0 {
		return s
	}
	if cpu := cur.CPUSeconds - prev.CPUSeconds; cpu >= 0 && l.CPUMillis > 0 {
		cores := cpu / elapsed
		s.CPUPercent = ptr(100 * cores * 1000 / float64(l.CPUMillis))
	}
	// CONFIG RESETSTAT zeroes the network counters of a running process.
	if net := cur.NetBytes - prev.NetBytes; net >= 0 {
		s.BandwidthMbps = ptr(float64(net) * 8 / elapsed / 1e6)
	}
	return s
}

// Retain appends s to the history (oldest first) and drops what the
// decision no longer needs: samples older than keep before s, except the
// newest of those, which proves the history spans the whole window. The
// result never has more than max samples.
func Retain(history []Sample, s Sample, keep time.Duration, max int) []Sample {
	out := make([]Sample, 0, len(history)+1)
	for _, h := range history {
		if !h.Time.Before(s.Time) {
			// A clock that went backwards: the new sample supersedes.
			continue
		}
		out = append(out, h)
	}
	out = append(out, s)
	cutoff := s.Time.Add(-keep)
	first := 0
	for i := range out {
		if !out[i].Time.After(cutoff) {
			first = i
		}
	}
	out = out[first:]
	if max > 0 && len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

func ptr(f float64) *float64 { return &f }
