package valkey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sample returns a reply captured from a real server (testdata/). The
// server sends CRLF line ends; the files keep LF so they diff cleanly.
func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lineEndings runs check with text as captured and as the server sends it.
func lineEndings(t *testing.T, text string, check func(t *testing.T, text string)) {
	t.Run("LF", func(t *testing.T) { check(t, text) })
	t.Run("CRLF", func(t *testing.T) { check(t, strings.ReplaceAll(text, "\n", "\r\n")) })
}
