package valkey

import "fmt"

// ClusterInfo is parsed CLUSTER INFO output.
type ClusterInfo struct {
	// State is "ok" or "fail".
	State         string
	SlotsAssigned int
	SlotsOK       int
	SlotsPFail    int
	SlotsFail     int
	KnownNodes    int
	// Size is the number of primaries serving at least one slot.
	Size         int
	CurrentEpoch int64
	MyEpoch      int64
	Fields       map[string]string
}

// OK reports whether the node considers the cluster healthy.
func (c ClusterInfo) OK() bool { return c.State == "ok" }

// parseClusterInfo parses the "key:value" lines CLUSTER INFO returns.
func parseClusterInfo(text string) (ClusterInfo, error) {
	fields := parseInfo(text).flat()
	state, ok := fields["cluster_state"]
	if !ok {
		return ClusterInfo{}, fmt.Errorf("parsing CLUSTER INFO: no cluster_state field")
	}
	info := ClusterInfo{State: state, Fields: fields}
	ints := []struct {
		key string
		dst *int
	}{
		{"cluster_slots_assigned", &info.SlotsAssigned},
		{"cluster_slots_ok", &info.SlotsOK},
		{"cluster_slots_pfail", &info.SlotsPFail},
		{"cluster_slots_fail", &info.SlotsFail},
		{"cluster_known_nodes", &info.KnownNodes},
		{"cluster_size", &info.Size},
	}
	for _, f := range ints {
		n, err := optionalInt(fields, f.key)
		if err != nil {
			return ClusterInfo{}, fmt.Errorf("parsing CLUSTER INFO: %w", err)
		}
		*f.dst = n
	}
	epochs := []struct {
		key string
		dst *int64
	}{
		{"cluster_current_epoch", &info.CurrentEpoch},
		{"cluster_my_epoch", &info.MyEpoch},
	}
	for _, f := range epochs {
		n, err := optionalInt64(fields, f.key)
		if err != nil {
			return ClusterInfo{}, fmt.Errorf("parsing CLUSTER INFO: %w", err)
		}
		*f.dst = n
	}
	return info, nil
}
