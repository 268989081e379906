package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// stringConst is one string constant declared in Go source.
type stringConst struct {
	name, typ, value string
}

// stringConsts reads the string constants of the non-test files in dir
// whose base name passes keep. The source is parsed rather than imported
// so that unexported constants count too.
func stringConsts(t *testing.T, dir string, keep func(file string) bool) []stringConst {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []stringConst
	for _, p := range paths {
		base := filepath.Base(p)
		if strings.HasSuffix(base, "_test.go") || !keep(base) {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatalf("%s: %s: %v", p, name.Name, err)
					}
					out = append(out, stringConst{name: name.Name, typ: typ, value: v})
				}
			}
		}
	}
	return out
}

// Every value a user can read in a condition's type or reason field, or in
// an Event's reason, is explained in the troubleshooting guide, quoted as
// code so that a common word does not pass by accident.
func TestTroubleshootingCoversEveryConditionAndReason(t *testing.T) {
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	all := func(string) bool { return true }
	hasPrefix := func(prefixes ...string) func(stringConst) bool {
		return func(c stringConst) bool {
			for _, p := range prefixes {
				if strings.HasPrefix(c.name, p) {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		name  string
		dir   string
		files func(string) bool
		want  func(stringConst) bool
	}{
		{
			name:  "condition types and reasons",
			dir:   "api/v1alpha1",
			files: func(f string) bool { return f == "conditions.go" },
			want:  hasPrefix("Cond", "Reason"),
		},
		{
			name:  "planner action kinds",
			dir:   "internal/topology",
			files: all,
			want:  func(c stringConst) bool { return c.typ == "Kind" },
		},
		{
			name:  "TLS Secret failures and warnings",
			dir:   "internal/tlssecret",
			files: all,
			want:  hasPrefix("Reason"),
		},
		{
			name:  "autoscaler hold reasons",
			dir:   "internal/autoscale",
			files: all,
			want:  hasPrefix("Reason"),
		},
		{
			name:  "reference resolution failures",
			dir:   "internal/resolve",
			files: all,
			want:  hasPrefix("Reason"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			found := 0
			for _, c := range stringConsts(t, filepath.Join(root, tc.dir), tc.files) {
				if !tc.want(c) {
					continue
				}
				found++
				if !strings.Contains(string(doc), "`"+c.value+"`") {
					t.Errorf("docs/troubleshooting.md does not mention `%s` (%s.%s)", c.value, filepath.Base(tc.dir), c.name)
				}
			}
			if found == 0 {
				t.Fatalf("no constants found in %s: the check no longer sees the code", tc.dir)
			}
		})
	}
}
