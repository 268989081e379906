package backup

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// scheduleFields name a schedule's fields in the order of a six-field
// expression; a five-field one has no seconds.
var scheduleFields = []string{"second", "minute", "hour", "day of month", "month", "day of week"}

// cronParser reads five fields, or six with seconds first: seconds let a
// schedule fire more often than once a minute, which a test needs. No
// descriptor (@daily, @every): a schedule is a list of due times, and
// @every has none of its own.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// fieldParser checks one field of a six-field expression at a time.
var fieldParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Schedule is a parsed spec.schedule; its due times are in UTC.
type Schedule struct{ spec cron.Schedule }

// ParseSchedule reads a cron expression. Its error says what is wrong in
// the words of the expression: the field by name, its text and why.
func ParseSchedule(expr string) (Schedule, error) {
	fields := strings.Fields(expr)
	if len(fields) > 0 && (strings.HasPrefix(fields[0], "TZ=") || strings.HasPrefix(fields[0], "CRON_TZ=")) {
		return Schedule{}, fmt.Errorf("schedule %q: %s: time zones are not supported, the schedule is in UTC", expr, fields[0])
	}
	if len(fields) != 5 && len(fields) != 6 {
		return Schedule{}, fmt.Errorf("schedule %q has %d fields; want 5 (minute hour day-of-month month day-of-week) or 6 (second first)", expr, len(fields))
	}
	names := scheduleFields
	if len(fields) == 5 {
		names = scheduleFields[1:]
	}
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*", "*"}
		probe[len(probe)-len(fields)+i] = f
		if _, err := fieldParser.Parse(strings.Join(probe, " ")); err != nil {
			return Schedule{}, fmt.Errorf("schedule %q: field %s %q: %w", expr, names[i], f, err)
		}
	}
	spec, err := cronParser.Parse(expr)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %w", expr, err)
	}
	// A day that never comes (the 30th of February): robfig gives up
	// after five years and answers the zero time.
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return Schedule{}, fmt.Errorf("schedule %q never falls due: no date matches its day of month, month and day of week", expr)
	}
	return Schedule{spec: spec}, nil
}

// Next is the first due time strictly after t (whole seconds, UTC).
func (s Schedule) Next(t time.Time) time.Time { return s.spec.Next(t.UTC()) }

// LastDue is the latest due time in (after, now], if any: the one backup a
// schedule owes at now. Due times missed while nobody looked (the operator
// down) collapse into this one. It looks back from now in windows that
// double, so a long gap costs a few dozen steps, not one per missed tick.
func (s Schedule) LastDue(after, now time.Time) (time.Time, bool) {
	if !now.After(after) {
		return time.Time{}, false
	}
	gap := now.Sub(after)
	for w := time.Second; ; w *= 2 {
		start, reachedAfter := now.Add(-w), false
		// The window that reaches after is the last; doubling no further
		// also keeps w from overflowing.
		if w > gap/2 {
			start, reachedAfter = after, true
		}
		if t := s.Next(start); !t.IsZero() && !t.After(now) {
			// Every due time in (start, now] lies in the older half of the
			// window: the previous, half-sized one held none.
			for {
				n := s.Next(t)
				if n.IsZero() || n.After(now) {
					return t, true
				}
				t = n
			}
		}
		if reachedAfter {
			return time.Time{}, false
		}
	}
}

// ScheduledName is the name of the backup a schedule takes at a due time:
// one name per due time, so a due time is never backed up twice.
func ScheduledName(schedule string, due time.Time) string {
	return schedule + "-" + due.UTC().Format("20060102t150405z")
}
