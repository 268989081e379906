package nodeconn

import (
	"strings"
)

// ParsePins reads the verified-leaf annotation FormatPins writes.
func ParsePins(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// FormatPins writes the verified-leaf annotation ParsePins reads.
func FormatPins(pins []string) string {
	return strings.Join(pins, ",")
}
