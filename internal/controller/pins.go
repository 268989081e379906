package controller

import (
	"strings"
)

// parsePins reads the verified-leaf annotation formatPins writes.
func parsePins(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// formatPins writes the verified-leaf annotation parsePins reads.
func formatPins(pins []string) string {
	return strings.Join(pins, ",")
}
