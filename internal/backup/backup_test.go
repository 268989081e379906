package backup

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/slotrange"
)

func TestSource(t *testing.T) {
	cases := []struct {
		name    string
		members []Member
		want    string
		wantErr bool
	}{
		{name: "primary alone", members: []Member{{Name: "p", Primary: true}}, want: "p"},
		{name: "replica in sync preferred", members: []Member{{Name: "p", Primary: true}, {Name: "r", InSync: true}}, want: "r"},
		{name: "replica out of sync passed over", members: []Member{{Name: "p", Primary: true}, {Name: "r"}}, want: "p"},
		{name: "first replica in sync by name", members: []Member{{Name: "r2", InSync: true}, {Name: "p", Primary: true}, {Name: "r1", InSync: true}}, want: "r1"},
		{name: "only an out-of-sync replica", members: []Member{{Name: "r"}}, wantErr: true},
		{name: "empty", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Source(Shard{Slots: []slotrange.Range{{Start: 0, End: 10}}, Members: tc.members})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %s, want an error", got.Name)
				}
				return
			}
			if err != nil || got.Name != tc.want {
				t.Fatalf("got %q, %v; want %q", got.Name, err, tc.want)
			}
		})
	}
}

func TestCaughtUpAndPrimary(t *testing.T) {
	for _, tc := range []struct {
		primary, replica int64
		want             bool
	}{{100, 99, false}, {100, 100, true}, {100, 101, true}, {0, 0, true}} {
		if got := CaughtUp(tc.primary, tc.replica); got != tc.want {
			t.Errorf("CaughtUp(%d, %d) = %v, want %v", tc.primary, tc.replica, got, tc.want)
		}
	}
	s := Shard{Members: []Member{{Name: "r", InSync: true}, {Name: "p", Primary: true}}}
	if p, ok := Primary(s); !ok || p.Name != "p" {
		t.Fatalf("Primary = %q, %v; want p", p.Name, ok)
	}
	if _, ok := Primary(Shard{Members: []Member{{Name: "r"}}}); ok {
		t.Fatal("a shard of replicas has no primary")
	}
}

func TestShards(t *testing.T) {
	r := func(a, b int) slotrange.Range { return slotrange.Range{Start: a, End: b} }
	cases := []struct {
		name    string
		shards  []Shard
		first   []string // each shard's first range, in order
		wantErr string
	}{
		{name: "ordered by lowest slot", shards: []Shard{{Slots: []slotrange.Range{r(8192, 16383)}}, {Slots: []slotrange.Range{r(0, 8191)}}}, first: []string{"0-8191", "8192-16383"}},
		{name: "split ranges merged", shards: []Shard{{Slots: []slotrange.Range{r(0, 99), r(100, 8191)}}, {Slots: []slotrange.Range{r(8192, 16383)}}}, first: []string{"0-8191", "8192-16383"}},
		{name: "slot unassigned", shards: []Shard{{Slots: []slotrange.Range{r(0, 8190)}}, {Slots: []slotrange.Range{r(8192, 16383)}}}, wantErr: "16383 slots"},
		{name: "slot served twice", shards: []Shard{{Slots: []slotrange.Range{r(0, 8192)}}, {Slots: []slotrange.Range{r(8192, 16383)}}}, wantErr: "16385 slots"},
		{name: "primary without slots", shards: []Shard{{Slots: []slotrange.Range{r(0, 16383)}}, {}}, wantErr: "serves no slot"},
		{name: "none", wantErr: "no shard"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Shards(tc.shards)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range got {
				if SlotStrings(s.Slots)[0] != tc.first[i] {
					t.Fatalf("shard %d starts with %v, want %s", i, s.Slots, tc.first[i])
				}
			}
		})
	}
}

func TestLayout(t *testing.T) {
	cases := []struct{ prefix, base string }{
		{"", "ns/c/b/"},
		{"backups", "backups/ns/c/b/"},
		{"a/b", "a/b/ns/c/b/"},
	}
	for _, tc := range cases {
		if got := Base(tc.prefix, "ns", "c", "b"); got != tc.base {
			t.Errorf("Base(%q) = %q, want %q", tc.prefix, got, tc.base)
		}
	}
	if got := ShardObject("x/", 1); got != "x/shard-1.rdb" {
		t.Errorf("ShardObject = %q", got)
	}
	if got := ManifestObject("x/"); got != "x/manifest.json" {
		t.Errorf("ManifestObject = %q", got)
	}
}

func TestBuildManifest(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := func(i int, done time.Time) ShardResult {
		return ShardResult{Index: i, Object: ShardObject("b/", i), Slots: []string{"0-1"}, Node: "n", ValkeyVersion: "8.0.1",
			Keys: 3, Bytes: 100, SHA256: "abc", StartedAt: t0, CompletedAt: done}
	}
	failed := ok(1, t0)
	failed.Err = errors.New("connection reset")
	cases := []struct {
		name    string
		results []ShardResult
		wantErr string
		done    time.Time
	}{
		{name: "every shard", results: []ShardResult{ok(0, t0.Add(time.Second)), ok(1, t0.Add(2*time.Second))}, done: t0.Add(2 * time.Second)},
		{name: "a shard failed", results: []ShardResult{ok(0, t0), failed}, wantErr: "shard 1 (node n): connection reset"},
		{name: "out of order", results: []ShardResult{ok(1, t0), ok(0, t0)}, wantErr: "out of order"},
		{name: "no checksum", results: []ShardResult{{Index: 0, Bytes: 1}}, wantErr: "no checksum"},
		{name: "nothing", wantErr: "no shard"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := BuildManifest("ns", "c", "b", t0, tc.results)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !m.CompletedAt.Equal(tc.done) || len(m.Shards) != len(tc.results) {
				t.Fatalf("manifest %+v", m)
			}
			b, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			var back Manifest
			if err := json.Unmarshal(b, &back); err != nil || back.Version != ManifestVersion || back.Shards[1].SHA256 != "abc" {
				t.Fatalf("round trip: %v %+v", err, back)
			}
		})
	}
}

func TestNext(t *testing.T) {
	cases := []struct {
		name   string
		o      Observed
		action Action
		reason string
	}{
		{name: "completed stays", o: Observed{Phase: valkeyv1.BackupCompleted}, action: Nothing},
		{name: "failed stays", o: Observed{Phase: valkeyv1.BackupFailed, ClusterFound: true, ClusterState: valkeyv1.StateActive}, action: Nothing},
		{name: "running after a restart fails", o: Observed{Phase: valkeyv1.BackupRunning, ClusterFound: true, ClusterState: valkeyv1.StateActive}, action: Fail, reason: valkeyv1.ReasonBackupSnapshotFailed},
		{name: "missing cluster fails", o: Observed{Cluster: "c"}, action: Fail, reason: valkeyv1.ReasonBackupClusterNotFound},
		{name: "creating cluster waits", o: Observed{ClusterFound: true, ClusterState: valkeyv1.StateCreating}, action: Wait, reason: valkeyv1.ReasonBackupWaiting},
		{name: "pending with active cluster starts", o: Observed{Phase: valkeyv1.BackupPending, ClusterFound: true, ClusterState: valkeyv1.StateActive}, action: Start},
		{name: "new with active cluster starts", o: Observed{ClusterFound: true, ClusterState: valkeyv1.StateActive}, action: Start},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.o)
			if got.Action != tc.action || got.Reason != tc.reason {
				t.Fatalf("Next = %+v, want action %d reason %q", got, tc.action, tc.reason)
			}
			if (got.Action == Fail || got.Action == Wait) && got.Message == "" {
				t.Fatal("no message")
			}
		})
	}
}

func TestKeyCount(t *testing.T) {
	cases := []struct {
		name    string
		fields  map[string]string
		want    int64
		wantErr bool
	}{
		{name: "empty node", fields: nil, want: 0},
		{name: "db0", fields: map[string]string{"db0": "keys=12,expires=3,avg_ttl=0"}, want: 12},
		{name: "two databases", fields: map[string]string{"db0": "keys=1,expires=0", "db3": "keys=2,expires=0"}, want: 3},
		{name: "unparsable", fields: map[string]string{"db0": "keys=x"}, wantErr: true},
		{name: "no count", fields: map[string]string{"db0": "expires=3"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KeyCount(tc.fields)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("KeyCount = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
