package backup

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Kept is what retention knows of one of a schedule's backups.
type Kept struct {
	Name    string
	Phase   valkeyv1.BackupPhase
	Created time.Time
}

// Retention is a schedule's spec.retention; zero fields are unset.
type Retention struct {
	KeepLast int
	MaxAge   time.Duration
}

// Set is whether any limit is set: without one every backup is kept.
func (r Retention) Set() bool { return r.KeepLast > 0 || r.MaxAge > 0 }

// Prune returns the backups out of retention, oldest first.
//
//   - A backup not yet final (Pending, Running, or not yet looked at) is
//     never pruned: its objects are being written.
//   - The newest Completed backup is never pruned, whatever its age: a
//     schedule whose later backups all fail still has one to restore.
//   - KeepLast keeps that many of the newest Completed backups.
//   - A Failed backup is pruned once a Completed backup newer than it
//     exists, and beyond the KeepLast newest Failed ones: it tells what
//     went wrong only until something went right.
//   - MaxAge prunes a final backup older than it.
func Prune(backups []Kept, r Retention, now time.Time) []string {
	if !r.Set() {
		return nil
	}
	newestFirst := slices.Clone(backups)
	slices.SortFunc(newestFirst, func(a, b Kept) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	var out []Kept
	completed, failed := 0, 0
	for _, b := range newestFirst {
		var prune bool
		switch b.Phase {
		case valkeyv1.BackupCompleted:
			completed++
			if completed == 1 {
				continue
			}
			prune = r.KeepLast > 0 && completed > r.KeepLast
		case valkeyv1.BackupFailed:
			failed++
			prune = completed > 0 || (r.KeepLast > 0 && failed > r.KeepLast)
		default:
			continue
		}
		if r.MaxAge > 0 && now.Sub(b.Created) > r.MaxAge {
			prune = true
		}
		if prune {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b Kept) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	names := make([]string, len(out))
	for i, b := range out {
		names[i] = b.Name
	}
	return names
}

// NextExpiry is the first time after now at which a final backup grows
// older than MaxAge, when one will: a schedule that creates nothing
// (suspended) must still wake up then to prune it.
func (r Retention) NextExpiry(backups []Kept, now time.Time) (time.Time, bool) {
	var first time.Time
	if r.MaxAge <= 0 {
		return first, false
	}
	for _, b := range backups {
		if b.Phase != valkeyv1.BackupCompleted && b.Phase != valkeyv1.BackupFailed {
			continue
		}
		// Prune compares with >, so the backup is out one instant later.
		at := b.Created.Add(r.MaxAge + time.Nanosecond)
		if at.After(now) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// Message is the RetentionApplied condition's message while nothing
// fails: the retention in force.
func (r Retention) Message() string {
	newest := fmt.Sprintf("the %d newest Completed backups", r.KeepLast)
	if r.KeepLast == 1 {
		newest = "the newest Completed backup"
	}
	switch {
	case r.KeepLast > 0 && r.MaxAge > 0:
		return fmt.Sprintf("keeping %s, none older than %s", newest, r.MaxAge)
	case r.KeepLast > 0:
		return "keeping " + newest
	case r.MaxAge > 0:
		return fmt.Sprintf("keeping backups younger than %s, and the newest Completed one", r.MaxAge)
	}
	return "no retention set: every backup is kept"
}
