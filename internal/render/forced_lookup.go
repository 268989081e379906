package render

// ForcedSetting is the value every node is forced to run key with, "" for
// a key the operator does not force on every node. Benchmarks give plain
// valkey-server processes the same value, so the comparison is fair.
func ForcedSetting(key string) string {
	for _, s := range forcedAlways {
		if s.key == key {
			return s.value
		}
	}
	return ""
}
