package localkube

import (
	"path/filepath"
	"sort"
	"strings"
)

// pathMap maps absolute paths as a container sees them (its volumeMounts) to
// the directories that stand in for them on this machine. A process here has
// no mount namespace, so every mention of a mount path in its arguments, and
// in configuration files projected for it, must be rewritten to the pod's own
// directory or all pods would share /etc/valkey and /var/lib/valkey.
type pathMap struct {
	entries []pathEntry // longest container path first
}

type pathEntry struct {
	container string
	host      string
}

func newPathMap(m map[string]string) pathMap {
	var p pathMap
	for c, h := range m {
		c = filepath.Clean(c)
		if c == "/" || !filepath.IsAbs(c) {
			continue
		}
		p.entries = append(p.entries, pathEntry{container: c, host: h})
	}
	sort.Slice(p.entries, func(i, j int) bool {
		if len(p.entries[i].container) != len(p.entries[j].container) {
			return len(p.entries[i].container) > len(p.entries[j].container)
		}
		return p.entries[i].container < p.entries[j].container
	})
	return p
}

func isPathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '/' || c == '~'
}

// rewrite replaces every occurrence of a mount path that stands as a whole
// path (or a path prefix ending at a '/') in s. Text that merely starts the
// same way, like /etc/valkey/tls.bak for a mount at /etc/valkey/tls, is left
// alone.
func (p pathMap) rewrite(s string) string {
	if len(p.entries) == 0 || !strings.Contains(s, "/") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '/' || (i > 0 && isPathChar(s[i-1])) {
			continue
		}
		for _, e := range p.entries {
			end := i + len(e.container)
			if !strings.HasPrefix(s[i:], e.container) {
				continue
			}
			if end < len(s) && s[end] != '/' && isPathChar(s[end]) {
				continue
			}
			b.WriteString(s[last:i])
			b.WriteString(e.host)
			last = end
			i = end - 1
			break
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// resolve maps one absolute container path to its host path.
func (p pathMap) resolve(containerPath string) (string, bool) {
	c := filepath.Clean(containerPath)
	for _, e := range p.entries {
		if c == e.container {
			return e.host, true
		}
		if strings.HasPrefix(c, e.container+"/") {
			return filepath.Join(e.host, strings.TrimPrefix(c, e.container+"/")), true
		}
	}
	return "", false
}
