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

// cycleAllowed names, per package, the files of a file cycle that predates
// this check and has not been untangled yet. A cycle passes only when all
// of its files are listed here; a new cycle, or a file joining this one,
// fails. An entry no longer in a cycle fails too, so the list only shrinks.
var cycleAllowed = map[string][]string{
	"cluster": {
		"cluster_act.go", "cluster_annotations.go", "cluster_connector.go", "cluster_controller.go",
		"cluster_finalize.go", "cluster_live_settings.go", "cluster_node_status.go", "cluster_objects.go",
		"cluster_observe.go", "cluster_pause.go", "cluster_plan.go", "cluster_pod_proof.go",
		"cluster_readiness.go", "cluster_resolve.go", "cluster_status.go", "cluster_tls.go",
		"cluster_volume_proof.go", "cluster_wave.go", "container_failures.go", "credentials.go",
		"credentials_rotation.go", "data_loss.go", "memory_headroom.go", "replacement_backoff.go",
		"rollout_gate.go", "status_build.go", "status_findings.go", "version_check.go", "volume_size.go",
	},
}

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
			if cycleIsAllowed(p.Name, scc) {
				continue
			}
			t.Errorf("package %s: files %s depend on each other:\n%s",
				p.PkgPath, strings.Join(scc, ", "), describeCycle(edges, scc))
		}
		checkAllowListCurrent(t, p, edges)
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

func cycleIsAllowed(pkg string, scc []string) bool {
	for _, f := range scc {
		if !slices.Contains(cycleAllowed[pkg], f) {
			return false
		}
	}
	return true
}

// checkAllowListCurrent fails for an allowed file of p that is no longer in
// a cycle, so the allow-list names exactly the files still tangled.
func checkAllowListCurrent(t *testing.T, p *packages.Package, edges map[string]map[string]fileEdge) {
	t.Helper()
	inCycle := map[string]bool{}
	for _, scc := range fileCycles(edges) {
		for _, f := range scc {
			inCycle[f] = true
		}
	}
	for _, f := range cycleAllowed[p.Name] {
		if !inCycle[f] {
			t.Errorf("package %s: %s is no longer in a file cycle; remove it from cycleAllowed", p.PkgPath, f)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
