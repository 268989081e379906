package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// settingError refuses a directive that would not stay on its own line of
// valkey.conf: a line break would let a value smuggle in further directives
// (an include, a user) past admission.
type settingError struct {
	Key    string
	Reason string
}

func (e *settingError) Error() string {
	return fmt.Sprintf("valkey setting %q: %s", e.Key, e.Reason)
}

func validateSettings(settings map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		switch {
		case k == "":
			return &settingError{Key: k, Reason: "empty directive name"}
		case strings.ContainsFunc(k, notDirectiveRune):
			// A space would split the key into a directive plus arguments,
			// so "include /x" would pass admission's check for "include".
			return &settingError{Key: k, Reason: "directive name must be printable without spaces or quotes"}
		case strings.ContainsAny(settings[k], "\r\n\x00"):
			return &settingError{Key: k, Reason: "value contains a line break or NUL"}
		}
	}
	return nil
}

func notDirectiveRune(r rune) bool {
	return r <= ' ' || r >= 0x7f || r == '"' || r == '\''
}

// valkeyConf renders a node's configuration file: one "key value" line per
// setting in key order, so the same settings always give the same bytes,
// then the include that brings in the replication password from its Secret
// mount. An empty value is written as "" (for example save "" disables
// snapshots); other values are written verbatim.
func valkeyConf(settings map[string]string) (string, error) {
	if err := validateSettings(settings); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := settings[k]
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(&b, "%s %s\n", k, v)
	}
	fmt.Fprintf(&b, "include %s\n", primaryAuthFile)
	return b.String(), nil
}

// PrimaryAuthConf is the fragment valkey.conf includes.
func PrimaryAuthConf(replicationPassword string) string {
	return "primaryauth " + replicationPassword + "\n"
}
