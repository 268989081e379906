package render

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Headroom between the container's memory limit and the maxmemory the
// operator derives from it. maxmemory bounds the data set Valkey accounts
// for, not the process: allocator fragmentation (commonly 10 to 30%), the
// server's own footprint (a few MiB), replica output buffers during a full
// sync and the replication backlog all come on top, and crossing the limit
// gets the container OOM-killed, which with restartPolicy Never loses the
// node. A fifth of the limit covers fragmentation on large nodes; the 32Mi
// floor covers the fixed costs that dominate on small ones.
const (
	headroomFraction = 5
	headroomFloor    = 32 << 20
	// minMaxmemory: below this, headroom would leave Valkey next to
	// nothing, so a tiny limit is simply halved.
	minMaxmemory = 16 << 20
)

// nodeSettings are the settings a new node records: the merged user map
// with the forced settings applied (see settings), the defaults where the
// user set none, plus a maxmemory derived
// from the container memory limit when the user set none. Without a limit
// there is nothing to derive from and Valkey's default (no limit) stays.
func nodeSettings(user map[string]string, tls bool, memory string) (map[string]string, error) {
	out, err := settings(user, tls)
	if err != nil {
		return nil, err
	}
	for _, d := range defaults {
		if !hasKey(out, d.key) {
			out[d.key] = d.value
		}
	}
	if memory == "" || hasKey(out, keyMaxmemory) {
		return out, nil
	}
	limit, err := resource.ParseQuantity(memory)
	if err != nil {
		return nil, fmt.Errorf("memory %q: %w", memory, err)
	}
	out[keyMaxmemory] = strconv.FormatInt(maxmemoryFor(limit.Value()), 10)
	return out, nil
}

const keyMaxmemory = "maxmemory"

func maxmemoryFor(limit int64) int64 {
	headroom := max(limit/headroomFraction, headroomFloor)
	if limit-headroom < minMaxmemory {
		return limit / 2
	}
	return limit - headroom
}

func hasKey(settings map[string]string, key string) bool {
	for k := range settings {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}
