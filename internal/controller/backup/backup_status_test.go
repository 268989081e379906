package backup

import (
	"errors"
	"testing"

	"github.com/gomomento/valkey-operator/internal/backup"
)

// A shard that failed shows where it came from, but no size or checksum
// that could be taken for a file's.
func TestStatusShards(t *testing.T) {
	results := []backup.ShardResult{
		{Index: 0, Node: "a", Slots: []string{"0-8191"}, Object: "x/shard-0.rdb", Keys: 3, Bytes: 10, SHA256: "aa", ValkeyVersion: "8.0.1"},
		{Index: 1, Node: "b", Slots: []string{"8192-16383"}, Object: "x/shard-1.rdb", Keys: 4, Bytes: 7, SHA256: "bb", Err: errors.New("cut")},
	}
	got := statusShards(results)
	cases := []struct {
		i      int
		node   string
		bytes  int64
		sha256 string
	}{
		{0, "a", 10, "aa"},
		{1, "b", 0, ""},
	}
	for _, tc := range cases {
		s := got[tc.i]
		if s.Node != tc.node || s.Bytes != tc.bytes || s.SHA256 != tc.sha256 || int(s.Index) != tc.i || s.Object != results[tc.i].Object {
			t.Errorf("shard %d: %+v", tc.i, s)
		}
	}
}
