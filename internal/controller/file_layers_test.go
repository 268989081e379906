package controller_test

import (
	"fmt"
	"go/ast"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// fileEdge is one reason file from depends on file to: an identifier used
// in from and declared in to.
type fileEdge struct{ from, to, ident string }

// TestFilesAreLayered checks that inside each controller package no file
// depends on a file that depends back on it: types at the bottom, helpers
// and phases above them, the reconcile that lists the phases on top. A file
// depends on another when it uses an identifier (type, function, method,
// variable, constant or field) declared there.
func TestFilesAreLayered(t *testing.T) {
	pkgs, err := loadTree(".")
	if err != nil {
		t.Fatalf("loading the controller packages: %v", err)
	}
	for _, p := range pkgs {
		edges := fileGraph(p)
		for _, scc := range fileCycles(edges) {
			t.Errorf("package %s: files %s depend on each other:\n%s",
				p.PkgPath, strings.Join(scc, ", "), describeCycle(edges, scc))
		}
	}
}

// fileGraph maps each non-test file of p to the files of p it depends on,
// with one identifier that makes it so.
func fileGraph(p *packages.Package) map[string]map[string]fileEdge {
	edges := map[string]map[string]fileEdge{}
	for _, f := range p.Syntax {
		from := filepath.Base(p.Fset.Position(f.Pos()).Filename)
		if strings.HasSuffix(from, "_test.go") {
			continue
		}
		edges[from] = map[string]fileEdge{}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.TypesInfo.Uses[id]
			if obj == nil || obj.Pkg() != p.Types {
				return true
			}
			to := filepath.Base(p.Fset.Position(obj.Pos()).Filename)
			if _, seen := edges[from][to]; !seen && to != from {
				edges[from][to] = fileEdge{from: from, to: to, ident: obj.Name()}
			}
			return true
		})
	}
	return edges
}

// fileCycles returns the strongly connected components of more than one
// file (Tarjan's algorithm), each sorted, in a stable order.
func fileCycles(edges map[string]map[string]fileEdge) [][]string {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range sortedKeys(edges[v]) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var scc []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			scc = append(scc, w)
			if w == v {
				break
			}
		}
		if len(scc) > 1 {
			sort.Strings(scc)
			out = append(out, scc)
		}
	}
	for _, v := range sortedKeys(edges) {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// describeCycle lists, for each file of the cycle, one edge to another file
// of it and one edge back, so the report shows the cycle's both directions.
func describeCycle(edges map[string]map[string]fileEdge, scc []string) string {
	var b strings.Builder
	for _, from := range scc {
		for _, to := range sortedKeys(edges[from]) {
			if !slices.Contains(scc, to) {
				continue
			}
			there := edges[from][to]
			fmt.Fprintf(&b, "  %s -> %s: %s", there.from, there.to, there.ident)
			if back, ok := edges[to][from]; ok {
				fmt.Fprintf(&b, "; back %s -> %s: %s", back.from, back.to, back.ident)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestFileCycles(t *testing.T) {
	edge := func(from string, to ...string) map[string]fileEdge {
		out := map[string]fileEdge{}
		for _, t := range to {
			out[t] = fileEdge{from: from, to: t, ident: "x"}
		}
		return out
	}
	tests := []struct {
		name  string
		edges map[string]map[string]fileEdge
		want  [][]string
	}{
		{"layered", map[string]map[string]fileEdge{"a.go": edge("a.go", "b.go", "c.go"), "b.go": edge("b.go", "c.go"), "c.go": {}}, nil},
		{"two files", map[string]map[string]fileEdge{"a.go": edge("a.go", "b.go"), "b.go": edge("b.go", "a.go"), "c.go": edge("c.go", "a.go")},
			[][]string{{"a.go", "b.go"}}},
		{"two cycles", map[string]map[string]fileEdge{
			"a.go": edge("a.go", "b.go"), "b.go": edge("b.go", "c.go"), "c.go": edge("c.go", "a.go", "d.go"),
			"d.go": edge("d.go", "e.go"), "e.go": edge("e.go", "d.go"),
		}, [][]string{{"a.go", "b.go", "c.go"}, {"d.go", "e.go"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fileCycles(tt.edges); !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("fileCycles = %v, want %v", got, tt.want)
			}
		})
	}
}
