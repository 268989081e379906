package valkey

import (
	"reflect"
	"testing"
	"time"
)

func TestParseSlotMigrations(t *testing.T) {
	const (
		name   = "5371b28997de6fd0bbe813ad8ebdfdf2faadb308"
		target = "4b4f12fdfb58d5e30fef7b9ad3f1651dacbbaba9"
		source = "93941e777e17fcbc92d4398cc957ffea888f472b"
	)
	at := time.Unix(1754870400, 0).UTC()
	done := SlotMigration{
		Name: name, Operation: "EXPORT", SlotRanges: []SlotRange{{Start: 0, End: 10}}, TargetNode: target, SourceNode: source,
		Created: at, LastUpdate: at, LastAck: at, State: SlotMigrationSuccess,
	}
	tests := []struct {
		name     string
		reply    any
		want     []SlotMigration
		finished []bool
		wantErr  bool
	}{
		{
			// The documented RESP3 example for Valkey 9.0.
			name: "RESP3 success",
			reply: []any{map[string]any{
				"name": name, "operation": "EXPORT", "slot_ranges": "0-10", "target_node": target, "source_node": source,
				"create_time": int64(1754870400), "last_update_time": int64(1754870400), "last_ack_time": int64(1754870400),
				"state": "success", "message": "", "cow_size": int64(0), "remaining_repl_size": int64(0),
			}},
			want:     []SlotMigration{done},
			finished: []bool{true},
		},
		{
			name: "RESP2 running with several ranges",
			reply: []any{[]any{
				"name", name, "operation", "IMPORT", "slot_ranges", "0-9 20-29", "target_node", target, "source_node", source,
				"create_time", int64(1754870400), "last_update_time", int64(1754870400), "last_ack_time", int64(1754870400),
				"state", "snapshotting", "message", "", "cow_size", int64(4096), "remaining_repl_size", int64(100),
			}},
			want: []SlotMigration{{
				Name: name, Operation: "IMPORT", SlotRanges: []SlotRange{{Start: 0, End: 9}, {Start: 20, End: 29}}, TargetNode: target, SourceNode: source,
				Created: at, LastUpdate: at, LastAck: at, State: "snapshotting", CowSize: 4096, RemainingReplSize: 100,
			}},
			finished: []bool{false},
		},
		{name: "none", reply: []any{}, want: []SlotMigration{}, finished: []bool{}},
		{name: "not an array", reply: map[string]any{}, wantErr: true},
		{name: "no name", reply: []any{map[string]any{"slot_ranges": "0-1"}}, wantErr: true},
		{name: "bad ranges", reply: []any{map[string]any{"name": name, "slot_ranges": "0-x"}}, wantErr: true},
		{name: "bad time", reply: []any{map[string]any{"name": name, "create_time": "soon"}}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSlotMigrations(tc.reply)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got\n%+v\nwant\n%+v", got, tc.want)
			}
			for i, m := range got {
				if m.Finished() != tc.finished[i] {
					t.Fatalf("entry %d Finished = %v", i, m.Finished())
				}
			}
		})
	}
}
