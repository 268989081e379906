package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// Every page in docs/ is listed in docs/index.md, so a new page cannot be
// written and never found.
func TestIndexListsEveryPage(t *testing.T) {
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(root, "docs", "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name != "index.md" && !strings.Contains(string(index), "]("+name+")") {
			t.Errorf("docs/index.md does not link %s", name)
		}
	}
}

// markdownLink is a relative link to a Markdown file, with its anchor.
var markdownLink = regexp.MustCompile(`\]\(([A-Za-z0-9_./-]*\.md)(#[^)]*)?\)`)

// Every link between the Markdown pages (the README and docs/) names a
// page that exists and, with an anchor, a heading on it.
func TestLinksBetweenPagesResolve(t *testing.T) {
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	anchors := map[string]map[string]bool{}
	headings := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		anchors[path] = headingAnchors(string(b))
		return anchors[path]
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Join(filepath.Dir(p), m[1])
			rel, _ := filepath.Rel(root, p)
			a := headings(target)
			if a == nil {
				t.Errorf("%s links %s, which does not exist", rel, m[1])
				continue
			}
			if anchor := strings.TrimPrefix(m[2], "#"); anchor != "" && !a[anchor] {
				t.Errorf("%s links %s#%s, which has no such heading", rel, m[1], anchor)
			}
		}
	}
}

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation other than hyphens dropped, spaces as hyphens, a
// repeated one numbered.
func headingAnchors(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for line := range strings.SplitSeq(page, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
