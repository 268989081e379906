package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// logLinesOnFailure is how many of a namespace's operator log lines a
// failed test prints; enough to cover the last minute of a cluster's story.
const logLinesOnFailure = 80

// noisyLogFields repeat on every controller-runtime line and say nothing
// about what the operator decided.
var noisyLogFields = regexp.MustCompile(` "(controllerGroup|controllerKind|reconcileID)"=("[^"]*"|\{[^}]*\})`)

// logNamespaceOnFailure prints, when the test fails, the operator's log
// lines about namespace ns. The suite's operator serves every test, so the
// tail of its whole log usually belongs to a later test; this slice is the
// failing cluster's own account.
func logNamespaceOnFailure(t testing.TB, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		lines, err := namespaceLogLines(filepath.Join(baseDir, "operator.log"), ns, logLinesOnFailure)
		if err != nil {
			t.Logf("reading the operator log: %v", err)
			return
		}
		t.Logf("--- operator log for namespace %s (last %d lines) ---\n%s", ns, len(lines), strings.Join(lines, "\n"))
	})
}

// namespaceLogLines returns the last `last` lines of the log that name ns,
// without the fields every line repeats.
func namespaceLogLines(path, ns string, last int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	needle := `"namespace"="` + ns + `"`
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, needle) {
			out = append(out, line)
		}
	}
	out = out[max(0, len(out)-last):]
	for i, line := range out {
		line = noisyLogFields.ReplaceAllString(line, "")
		if len(line) > 600 {
			line = line[:600] + "…"
		}
		out[i] = line
	}
	return out, sc.Err()
}
