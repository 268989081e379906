package backup

import (
	"slices"
	"strings"
	"testing"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestParseSchedule(t *testing.T) {
	cases := []struct {
		expr    string
		wantErr []string // substrings of the error; none: valid
	}{
		{expr: "15 4 * * *"},
		{expr: "*/5 * * * * *"},
		{expr: "0 0 * * 1-5"},
		{expr: "0 3 1 */2 *"},
		{expr: "  30  2 * * sun "},
		{expr: "61 * * * *", wantErr: []string{"field minute", `"61"`, "above maximum (59)"}},
		{expr: "0 25 * * *", wantErr: []string{"field hour", `"25"`}},
		{expr: "0 0 0 * *", wantErr: []string{"field day of month", `"0"`}},
		{expr: "0 0 * 13 *", wantErr: []string{"field month", `"13"`}},
		{expr: "0 0 * * funday", wantErr: []string{"field day of week", `"funday"`}},
		{expr: "70 * * * * *", wantErr: []string{"field second", `"70"`}},
		{expr: "x 0 * * * *", wantErr: []string{"field second", `"x"`}},
		{expr: "* * *", wantErr: []string{"has 3 fields", "want 5"}},
		{expr: "* * * * * * *", wantErr: []string{"has 7 fields"}},
		{expr: "", wantErr: []string{"has 0 fields"}},
		{expr: "@daily", wantErr: []string{"has 1 fields"}},
		{expr: "CRON_TZ=Europe/Paris 0 3 * * *", wantErr: []string{"time zones are not supported"}},
		{expr: "0 0 30 2 *", wantErr: []string{"never falls due"}},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := ParseSchedule(tc.expr)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("ParseSchedule: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLastDueAndNext(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name       string
		expr       string
		after, now string
		due        string // empty: nothing due
		next       string
	}{
		{name: "nothing due yet", expr: "15 4 * * *", after: "2026-12-05T00:00:00Z", now: "2026-12-05T04:14:59Z", next: "2026-12-05T04:15:00Z"},
		{name: "due exactly now", expr: "15 4 * * *", after: "2026-12-05T00:00:00Z", now: "2026-12-05T04:15:00Z", due: "2026-12-05T04:15:00Z", next: "2026-12-06T04:15:00Z"},
		{name: "just after the due time", expr: "15 4 * * *", after: "2026-12-05T00:00:00Z", now: "2026-12-05T04:15:00.2Z", due: "2026-12-05T04:15:00Z", next: "2026-12-06T04:15:00Z"},
		{name: "the due time already taken", expr: "15 4 * * *", after: "2026-12-05T04:15:00Z", now: "2026-12-05T04:20:00Z", next: "2026-12-06T04:15:00Z"},
		{name: "missed for days: only the latest", expr: "15 4 * * *", after: "2026-12-01T04:15:00Z", now: "2026-12-05T09:00:00Z", due: "2026-12-05T04:15:00Z", next: "2026-12-06T04:15:00Z"},
		{name: "every five seconds, a week missed", expr: "*/5 * * * * *", after: "2026-11-28T00:00:00Z", now: "2026-12-05T04:15:03.5Z", due: "2026-12-05T04:15:00Z", next: "2026-12-05T04:15:05Z"},
		{name: "every minute during hour 3, a year missed", expr: "* 3 * * *", after: "2025-12-05T00:00:00Z", now: "2026-12-05T04:15:00Z", due: "2026-12-05T03:59:00Z", next: "2026-12-06T03:00:00Z"},
		{name: "monthly, after just before the tick", expr: "0 0 1 * *", after: "2026-11-30T23:59:59Z", now: "2026-12-20T00:00:00Z", due: "2026-12-01T00:00:00Z", next: "2027-01-01T00:00:00Z"},
		{name: "now before after", expr: "* * * * *", after: "2026-12-05T00:00:00Z", now: "2026-12-04T00:00:00Z", next: "2026-12-04T00:01:00Z"},
		{name: "a time zone other than UTC is read as UTC", expr: "0 4 * * *", after: "2026-12-05T00:00:00+02:00", now: "2026-12-05T06:30:00+02:00", due: "2026-12-05T04:00:00Z", next: "2026-12-06T04:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSchedule(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			due, ok := s.LastDue(at(tc.after), at(tc.now))
			if tc.due == "" {
				if ok {
					t.Fatalf("due %s, want none", due)
				}
			} else if !ok || !due.Equal(at(tc.due)) {
				t.Fatalf("due %s (%v), want %s", due, ok, tc.due)
			}
			if next := s.Next(at(tc.now)); !next.Equal(at(tc.next)) || next.Location() != time.UTC {
				t.Fatalf("next %s, want %s in UTC", next, tc.next)
			}
		})
	}
}

func TestScheduledName(t *testing.T) {
	due := time.Date(2026, 12, 5, 4, 15, 0, 0, time.FixedZone("x", 3600))
	if got := ScheduledName("nightly", due); got != "nightly-20261205t031500z" {
		t.Fatalf("ScheduledName = %q", got)
	}
}

func TestPrune(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	b := func(name string, phase valkeyv1.BackupPhase, hoursAgo int) Kept {
		return Kept{Name: name, Phase: phase, Created: now.Add(-time.Duration(hoursAgo) * time.Hour)}
	}
	const (
		done    = valkeyv1.BackupCompleted
		failed  = valkeyv1.BackupFailed
		running = valkeyv1.BackupRunning
		pending = valkeyv1.BackupPending
	)
	cases := []struct {
		name    string
		backups []Kept
		r       Retention
		want    []string
	}{
		{name: "no retention keeps everything", backups: []Kept{b("a", done, 5), b("b", done, 4), b("c", failed, 1)}, want: nil},
		{name: "keepLast 2 of 4", backups: []Kept{b("d", done, 1), b("a", done, 4), b("c", done, 2), b("b", done, 3)},
			r: Retention{KeepLast: 2}, want: []string{"a", "b"}},
		{name: "running and pending never pruned", backups: []Kept{b("a", running, 9), b("b", pending, 8), b("e", "", 7), b("c", done, 2), b("d", done, 1)},
			r: Retention{KeepLast: 1}, want: []string{"c"}},
		{name: "failed pruned once a later backup completed", backups: []Kept{b("a", failed, 3), b("b", done, 2), b("c", failed, 1)},
			r: Retention{KeepLast: 5}, want: []string{"a"}},
		{name: "failures beyond keepLast", backups: []Kept{b("a", failed, 3), b("b", failed, 2), b("c", failed, 1)},
			r: Retention{KeepLast: 2}, want: []string{"a"}},
		{name: "maxAge prunes old ones", backups: []Kept{b("a", done, 30), b("b", failed, 26), b("c", done, 2)},
			r: Retention{MaxAge: 24 * time.Hour}, want: []string{"a", "b"}},
		{name: "the newest completed survives maxAge", backups: []Kept{b("a", done, 50), b("b", done, 40), b("c", failed, 1)},
			r: Retention{MaxAge: 24 * time.Hour}, want: []string{"a"}},
		{name: "the newest completed survives keepLast among newer failures", backups: []Kept{b("a", done, 5), b("b", failed, 3), b("c", failed, 2), b("d", failed, 1)},
			r: Retention{KeepLast: 1}, want: []string{"b", "c"}},
		{name: "both limits", backups: []Kept{b("a", done, 50), b("b", done, 3), b("c", done, 2), b("d", done, 1)},
			r: Retention{KeepLast: 3, MaxAge: 24 * time.Hour}, want: []string{"a"}},
		{name: "same creation time ordered by name", backups: []Kept{b("x-2", done, 1), b("x-1", done, 1), b("x-3", done, 1)},
			r: Retention{KeepLast: 1}, want: []string{"x-1", "x-2"}},
		{name: "nothing", r: Retention{KeepLast: 1}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Prune(tc.backups, tc.r, now); !slices.Equal(got, tc.want) {
				t.Fatalf("Prune = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPruneTarget(t *testing.T) {
	own := valkeyv1.BackupDestination{Endpoint: "https://s3.example.com", Bucket: "bk", Prefix: "p", CredentialsSecretRef: "old"}
	rotated := own
	rotated.CredentialsSecretRef = "new"
	moved := rotated
	moved.Bucket = "elsewhere"
	path := "s3://bk/p/ns/c/nightly-1/"
	cases := []struct {
		name       string
		statusPath string
		schedule   valkeyv1.BackupDestination
		wantCreds  string
		wantBase   string
		wantErr    string
	}{
		{name: "nothing written", statusPath: "", schedule: rotated, wantCreds: "old", wantBase: ""},
		{name: "same bucket: the schedule's current credentials", statusPath: path, schedule: rotated, wantCreds: "new", wantBase: "p/ns/c/nightly-1/"},
		{name: "schedule moved to another bucket: the backup's own", statusPath: path, schedule: moved, wantCreds: "old", wantBase: "p/ns/c/nightly-1/"},
		{name: "a status.path elsewhere is refused", statusPath: "s3://bk/p/ns/other/", schedule: rotated, wantErr: "is not where it writes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, base, err := PruneTarget("ns", "nightly-1", "c", tc.statusPath, own, tc.schedule)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || base != "" {
					t.Fatalf("error %v, base %q; want %q", err, base, tc.wantErr)
				}
				return
			}
			if err != nil || base != tc.wantBase || d.CredentialsSecretRef != tc.wantCreds || d.Bucket != own.Bucket {
				t.Fatalf("got %+v, %q, %v", d, base, err)
			}
		})
	}
}

func TestNextExpiry(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ago := func(h int) time.Time { return now.Add(-time.Duration(h) * time.Hour) }
	day := Retention{MaxAge: 24 * time.Hour}
	cases := []struct {
		name    string
		r       Retention
		backups []Kept
		want    time.Time // zero: none
	}{
		{name: "no maxAge", r: Retention{KeepLast: 1}, backups: []Kept{{Name: "a", Phase: valkeyv1.BackupCompleted, Created: ago(1)}}},
		{name: "the oldest final one", r: day, backups: []Kept{
			{Name: "a", Phase: valkeyv1.BackupCompleted, Created: ago(2)},
			{Name: "b", Phase: valkeyv1.BackupFailed, Created: ago(5)},
			{Name: "c", Phase: valkeyv1.BackupRunning, Created: ago(10)},
		}, want: ago(5).Add(24*time.Hour + time.Nanosecond)},
		{name: "already expired ones are not waited for", r: day, backups: []Kept{
			{Name: "a", Phase: valkeyv1.BackupCompleted, Created: ago(30)},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.r.NextExpiry(tc.backups, now)
			if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
				t.Fatalf("NextExpiry = %s, %v; want %s", got, ok, tc.want)
			}
		})
	}
}

func TestRetentionMessage(t *testing.T) {
	for _, tc := range []struct {
		r    Retention
		want string
	}{
		{Retention{}, "every backup is kept"},
		{Retention{KeepLast: 2}, "the 2 newest Completed"},
		{Retention{KeepLast: 1}, "keeping the newest Completed backup"},
		{Retention{MaxAge: time.Hour}, "younger than 1h0m0s"},
		{Retention{KeepLast: 3, MaxAge: time.Hour}, "3 newest Completed backups, none older than 1h0m0s"},
	} {
		if got := tc.r.Message(); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q lacks %q", tc.r, got, tc.want)
		}
	}
}
