package valkey

import (
	"fmt"
	"strconv"
)

// UsageInfo is what the operator samples from a node for autoscaling and
// metering: memory from INFO MEMORY, process CPU from INFO CPU, network
// counters from INFO STATS and the run ID from INFO SERVER, which tells a
// restarted process (whose counters began again) from the one sampled before.
type UsageInfo struct {
	RunID          string
	UsedMemory     int64
	UsedMemoryPeak int64
	// MaxMemory is 0 when the node has no maxmemory.
	MaxMemory int64
	// CPUSeconds is used_cpu_sys + used_cpu_user: the process's CPU time
	// since it started.
	CPUSeconds float64
	// NetBytes is total_net_input_bytes + total_net_output_bytes.
	NetBytes int64
}

// parseUsageInfo extracts UsageInfo from the output of
// INFO SERVER MEMORY CPU STATS.
func parseUsageInfo(text string) (UsageInfo, error) {
	return usageInfoFrom(parseInfo(text).flat())
}

// usageInfoFrom is UsageInfo from INFO's fields, sections flattened.
func usageInfoFrom(fields map[string]string) (UsageInfo, error) {
	if _, ok := fields["used_memory"]; !ok {
		return UsageInfo{}, fmt.Errorf("parsing usage INFO: no used_memory field")
	}
	u := UsageInfo{RunID: fields["run_id"]}
	ints := []struct {
		key string
		dst *int64
	}{
		{"used_memory", &u.UsedMemory},
		{"used_memory_peak", &u.UsedMemoryPeak},
		{"maxmemory", &u.MaxMemory},
	}
	for _, f := range ints {
		v, err := optionalInt64(fields, f.key)
		if err != nil {
			return UsageInfo{}, fmt.Errorf("parsing usage INFO: %w", err)
		}
		*f.dst = v
	}
	for _, key := range []string{"total_net_input_bytes", "total_net_output_bytes"} {
		v, err := optionalInt64(fields, key)
		if err != nil {
			return UsageInfo{}, fmt.Errorf("parsing usage INFO: %w", err)
		}
		u.NetBytes += v
	}
	for _, key := range []string{"used_cpu_sys", "used_cpu_user"} {
		raw, ok := fields[key]
		if !ok || raw == "" {
			continue
		}
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return UsageInfo{}, fmt.Errorf("parsing usage INFO: field %s=%q is not a number", key, raw)
		}
		u.CPUSeconds += v
	}
	return u, nil
}
