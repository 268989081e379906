package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every registered collector is one metric, named with its labels,
// including vectors that have no series yet.
func TestMetricLabels(t *testing.T) {
	got := MetricLabels()
	if len(got) != len(registered) {
		t.Fatalf("%d metrics %v for %d collectors", len(got), got, len(registered))
	}
	for name, labels := range map[string][]string{
		"valkey_cluster_state":                             {"namespace", "cluster", "state"},
		"valkey_acl_loads_total":                           {"namespace", "cluster", "result"},
		"valkey_cluster_tls_certificate_not_after_seconds": {"namespace", "cluster"},
		"valkey_cluster_autoscaling_decisions_total":       {"namespace", "cluster", "direction"},
	} {
		if !slices.Equal(got[name], labels) {
			t.Errorf("%s has labels %q, want %q", name, got[name], labels)
		}
	}
}

// Every metric of the controllers is declared in metrics.go and registered
// by its one list, so that a new metric cannot be created and left
// unregistered, or registered in a way MetricLabels (and the docs built on
// it) miss.
func TestMetricsDeclaredInOnePlace(t *testing.T) {
	fset := token.NewFileSet()
	files := controllerSources(t)
	created := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var what string
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				x, _ := fn.X.(*ast.Ident)
				switch {
				case fn.Sel.Name == "MustRegister" || fn.Sel.Name == "Register":
					what = fn.Sel.Name
				case x != nil && (x.Name == "prometheus" || x.Name == "promauto") && strings.HasPrefix(fn.Sel.Name, "New") && fn.Sel.Name != "NewDesc":
					what = x.Name + "." + fn.Sel.Name
				}
			case *ast.Ident:
				if fn.Name == "register" {
					what = "register"
				}
			}
			if what == "" {
				return true
			}
			if name != filepath.Join("..", "metrics", "metrics.go") {
				t.Errorf("%s: %s outside metrics.go", fset.Position(call.Pos()), what)
			}
			if strings.Contains(what, ".New") {
				created++
			}
			return true
		})
	}
	if created != len(registered) {
		t.Errorf("%d collectors created, %d registered", created, len(registered))
	}
}

// controllerSources are the non-test files of every controller package.
func controllerSources(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
