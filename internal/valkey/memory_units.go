package valkey

import (
	"fmt"
	"strconv"
	"strings"
)

// memoryUnits are the suffixes valkey.conf accepts on memory sizes: k, m
// and g are powers of 1000, kb, mb and gb powers of 1024, any case.
var memoryUnits = []struct {
	suffix string
	factor int64
}{
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
	{"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000},
	{"b", 1},
}

// ParseMemory reads a valkey.conf memory size such as "64mb" or "1073741824".
func ParseMemory(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	factor := int64(1)
	for _, u := range memoryUnits {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, factor = n, u.factor
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || (n > 0 && factor > (1<<63-1)/n) {
		return 0, fmt.Errorf("memory size %q: want a non-negative number with an optional k, kb, m, mb, g or gb", s)
	}
	return n * factor, nil
}
