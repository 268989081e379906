package cluster

import (
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

func TestMigrationFailure(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1796227100+int64(s), 0) }
	job := func(created int, state, msg string) valkey.SlotMigration {
		return valkey.SlotMigration{Operation: "EXPORT", SlotRanges: []valkey.SlotRange{{Start: 0, End: 63}},
			Created: at(created), State: state, Message: msg}
	}
	tests := []struct {
		name string
		jobs []valkey.SlotMigration
		want string
	}{
		{"no job", nil, ""},
		{"the latest succeeded", []valkey.SlotMigration{job(1, "failed", "Connection lost"), job(2, "success", "")}, ""},
		{"the latest failed", []valkey.SlotMigration{job(2, "failed", "Connection lost to target"), job(1, "success", "")},
			"n1 export of slots [0-63] failed: Connection lost to target"},
		{"a running job is not finished", []valkey.SlotMigration{job(1, "success", ""), job(3, "receiving-snapshot", "")}, ""},
		{"cancelled counts", []valkey.SlotMigration{job(1, "cancelled", "Cancelled by user")},
			"n1 export of slots [0-63] cancelled: Cancelled by user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := migrationFailure("n1", tt.jobs); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
