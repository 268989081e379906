package metering

import (
	"fmt"
	"math/bits"
	"time"
)

// byteMillisPerMBs is one megabyte-second (10^6 bytes for 1000 ms).
const byteMillisPerMBs = 1_000_000_000

// Meter is a record's running state.
type Meter struct {
	// MegabyteSeconds is the whole part of the accumulator and
	// RemainderByteMillis what is left below one megabyte-second, so that
	// sampling often or rarely bills exactly the same.
	MegabyteSeconds     int64
	RemainderByteMillis int64
	// Last is when it was last advanced, zero before the first sample.
	Last time.Time
	// ProvisionedBytes is what the time since Last is billed at.
	ProvisionedBytes int64
}

// Advance bills the time since the last sample, in whole milliseconds, at
// the figure that held during it, then makes provisioned the figure from
// now on. The first sample only starts the clock; a clock that went
// backwards bills nothing and keeps the later time.
func (m Meter) Advance(now time.Time, provisioned int64) Meter {
	if !m.Last.IsZero() && now.After(m.Last) {
		ms := now.Sub(m.Last).Milliseconds()
		hi, lo := bits.Mul64(uint64(max(m.ProvisionedBytes, 0)), uint64(ms))
		lo, carry := bits.Add64(lo, uint64(m.RemainderByteMillis), 0)
		hi += carry
		q, r := bits.Div64(hi, lo, byteMillisPerMBs)
		m.MegabyteSeconds += int64(q)
		m.RemainderByteMillis = int64(r)
		// Only whole milliseconds were billed: the rest stays for next time.
		m.Last = m.Last.Add(time.Duration(ms) * time.Millisecond)
	}
	if m.Last.IsZero() {
		m.Last = now
	}
	m.ProvisionedBytes = provisioned
	return m
}

// GBHours formats megabyte-seconds as gigabyte-hours, truncated to six
// decimals.
func GBHours(megabyteSeconds int64) string {
	// 1 GB-hour = 1000 MB x 3600 s.
	const unit = 3_600_000
	whole, frac := megabyteSeconds/unit, megabyteSeconds%unit
	return fmt.Sprintf("%d.%06d", whole, frac*1_000_000/unit)
}

// SampleDue says whether a record last sampled at last is due for its next
// sample at now, given the interval, and else how long until it is. Events
// that bring the record back early (its own status write, a restart) must
// not sample it again: each early sample would be one more API write per
// cluster, and the interval is what the docs promise.
func SampleDue(last time.Time, now time.Time, interval time.Duration) (bool, time.Duration) {
	if last.IsZero() {
		return true, 0
	}
	wait := last.Add(interval).Sub(now)
	if wait <= 0 {
		return true, 0
	}
	return false, wait
}

// SampleNow is SampleDue, except that a record whose cluster's figure is
// no longer the one it bills at is sampled at once: the time since the
// last sample is billed at the old figure and what follows at the new, so
// a new shard or a resized node is billed from the moment the operator
// sees it rather than from the next tick.
func SampleNow(last, now time.Time, interval time.Duration, billed, current int64) (bool, time.Duration) {
	due, wait := SampleDue(last, now, interval)
	if due || billed != current {
		return true, 0
	}
	return false, wait
}
