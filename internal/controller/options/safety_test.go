package options

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestSafetyIntervalJitter(t *testing.T) {
	const base = 5 * time.Minute
	seen := map[time.Duration]bool{}
	for i := range 200 {
		uid := types.UID(fmt.Sprintf("cluster-%d", i))
		got := safetyInterval(uid, base)
		if got < 4*time.Minute || got > 6*time.Minute {
			t.Fatalf("safetyInterval(%s) = %s, want within 5m ± 20%%", uid, got)
		}
		if again := safetyInterval(uid, base); again != got {
			t.Fatalf("safetyInterval(%s) = %s then %s, want the same", uid, got, again)
		}
		seen[got.Round(10*time.Second)] = true
	}
	// Spread: 200 clusters over a two-minute range land on many values.
	if len(seen) < 8 {
		t.Fatalf("200 clusters got %d distinct intervals (to 10 s), want a spread", len(seen))
	}
	for _, tc := range []struct {
		name string
		uid  types.UID
		base time.Duration
	}{
		{"empty uid", "", base},
		{"short base", "a", time.Second},
		{"zero base", "a", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := safetyInterval(tc.uid, tc.base)
			lo, hi := time.Duration(float64(tc.base)*0.8), time.Duration(float64(tc.base)*1.2)
			if got < lo || got > hi {
				t.Fatalf("safetyInterval(%q, %s) = %s, want in [%s, %s]", tc.uid, tc.base, got, lo, hi)
			}
		})
	}
}

func TestSafetyForDefaultsAndJitters(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  time.Duration
		want time.Duration
	}{
		{"set", time.Minute, time.Minute},
		{"unset takes the shipped interval", 0, DefaultOptions().SafetyInterval},
		{"negative takes the shipped interval", -time.Second, DefaultOptions().SafetyInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Options{SafetyInterval: tc.set}.SafetyFor("uid-1")
			if want := safetyInterval("uid-1", tc.want); got != want {
				t.Fatalf("SafetyFor = %s, want %s (%s jittered)", got, want, tc.want)
			}
		})
	}
}
