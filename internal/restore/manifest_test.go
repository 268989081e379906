package restore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/internal/backup"
)

func manifestOf(t *testing.T, edit func(*backup.Manifest)) []byte {
	t.Helper()
	m := backup.Manifest{Version: backup.ManifestVersion, Shards: []backup.ManifestShard{
		{Index: 0, Object: "b/shard-0.rdb", Slots: []string{"0-8191"}, ValkeyVersion: "8.0.1", Bytes: 10, SHA256: strings.Repeat("a", 64)},
		{Index: 1, Object: "b/shard-1.rdb", Slots: []string{"8192-16000", "16001-16383"}, ValkeyVersion: "8.0.1", Bytes: 10, SHA256: strings.Repeat("b", 64)},
	}}
	if edit != nil {
		edit(&m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseManifest(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(*backup.Manifest)
		wantErr string
	}{
		{name: "whole"},
		{name: "unknown format", edit: func(m *backup.Manifest) { m.Version = 9 }, wantErr: "format 9"},
		{name: "a slot missing", edit: func(m *backup.Manifest) { m.Shards[1].Slots = []string{"8192-16000"} }, wantErr: "slot 16001 is served by 0"},
		{name: "a slot twice", edit: func(m *backup.Manifest) { m.Shards[1].Slots = []string{"8191-16383"} }, wantErr: "slot 8191 is served by 2"},
		{name: "no checksum", edit: func(m *backup.Manifest) { m.Shards[0].SHA256 = "" }, wantErr: "lacks its object"},
		{name: "out of order", edit: func(m *backup.Manifest) { m.Shards[0].Index = 1 }, wantErr: "has index 1"},
		{name: "bad range", edit: func(m *backup.Manifest) { m.Shards[0].Slots = []string{"0-x"} }, wantErr: "not START-END"},
		{name: "no shard", edit: func(m *backup.Manifest) { m.Shards = nil }, wantErr: "no shard"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest(manifestOf(t, tc.edit))
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if _, err := ParseManifest([]byte("{")); err == nil {
		t.Error("broken JSON parsed")
	}
}

func TestCanLoad(t *testing.T) {
	for _, tc := range []struct {
		loader, written string
		ok              bool
	}{
		{"8.0.1", "8.0.1", true}, {"9.1.2", "8.0.1", true}, {"8.0.3", "8.0.1", true},
		{"8.0.1", "8.0.3", true}, {"8.0.1", "9.1.2", false}, {"8.0.1", "8.1.0", false},
	} {
		if err := CanLoad(tc.loader, tc.written); (err == nil) != tc.ok {
			t.Errorf("CanLoad(%s, %s) = %v, want ok=%v", tc.loader, tc.written, err, tc.ok)
		}
	}
}

func TestBase(t *testing.T) {
	for _, tc := range []struct{ bucket, in, want, err string }{
		{"b", "s3://b/ns/c/nightly/", "ns/c/nightly/", ""},
		{"b", "ns/c/nightly", "ns/c/nightly/", ""},
		{"b", "s3://other/ns/c/x/", "", "not in bucket b"},
		{"b", "s3://b/", "", "names no folder"},
	} {
		got, err := Base(tc.bucket, tc.in)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Base(%s, %s) = %q, %v; want %q, %q", tc.bucket, tc.in, got, err, tc.want, tc.err)
		}
	}
}
