package valkey

import (
	"fmt"
	"time"
)

// Slot migration states CLUSTER GETSLOTMIGRATIONS reports for finished
// jobs; any other state means the job is still running.
const (
	SlotMigrationSuccess   = "success"
	SlotMigrationFailed    = "failed"
	SlotMigrationCancelled = "cancelled"
)

// Operations of a CLUSTER GETSLOTMIGRATIONS entry: the source runs the
// export, the target the import.
const (
	SlotMigrationExport = "EXPORT"
	SlotMigrationImport = "IMPORT"
)

// SlotMigration is one entry of CLUSTER GETSLOTMIGRATIONS (Valkey >= 9).
type SlotMigration struct {
	Name string
	// Operation is "EXPORT" on the source and "IMPORT" on the target.
	Operation         string
	SlotRanges        []SlotRange
	TargetNode        string
	SourceNode        string
	Created           time.Time
	LastUpdate        time.Time
	LastAck           time.Time
	State             string
	Message           string
	CowSize           int64
	RemainingReplSize int64
}

// Finished reports whether the job has reached a final state.
func (m SlotMigration) Finished() bool {
	switch m.State {
	case SlotMigrationSuccess, SlotMigrationFailed, SlotMigrationCancelled:
		return true
	}
	return false
}

// parseSlotMigrations parses a CLUSTER GETSLOTMIGRATIONS reply in the
// generic form valkey-go's ToAny produces.
func parseSlotMigrations(reply any) ([]SlotMigration, error) {
	return parseEntries(reply, "CLUSTER GETSLOTMIGRATIONS", parseSlotMigration)
}

func parseSlotMigration(v any) (SlotMigration, error) {
	fields, err := asFields(v)
	if err != nil {
		return SlotMigration{}, err
	}
	m := SlotMigration{
		Name:       asString(fields["name"]),
		Operation:  asString(fields["operation"]),
		TargetNode: asString(fields["target_node"]),
		SourceNode: asString(fields["source_node"]),
		State:      asString(fields["state"]),
		Message:    asString(fields["message"]),
	}
	if m.SlotRanges, err = ParseSlotRanges(asString(fields["slot_ranges"])); err != nil {
		return SlotMigration{}, err
	}
	times := []struct {
		key string
		dst *time.Time
	}{
		{"create_time", &m.Created},
		{"last_update_time", &m.LastUpdate},
		{"last_ack_time", &m.LastAck},
	}
	for _, t := range times {
		raw, ok := fields[t.key]
		if !ok || raw == nil {
			continue
		}
		secs, err := asInt64(raw)
		if err != nil {
			return SlotMigration{}, fmt.Errorf("%s: %w", t.key, err)
		}
		*t.dst = time.Unix(secs, 0).UTC()
	}
	sizes := []struct {
		key string
		dst *int64
	}{
		{"cow_size", &m.CowSize},
		{"remaining_repl_size", &m.RemainingReplSize},
	}
	for _, s := range sizes {
		raw, ok := fields[s.key]
		if !ok || raw == nil {
			continue
		}
		n, err := asInt64(raw)
		if err != nil {
			return SlotMigration{}, fmt.Errorf("%s: %w", s.key, err)
		}
		*s.dst = n
	}
	if m.Name == "" {
		return SlotMigration{}, fmt.Errorf("no name")
	}
	return m, nil
}
