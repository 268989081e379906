package controller_test

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
)

// Every write the controllers make, by package and resource, is declared
// in controller.Handoffs with who acts on it and how they are woken, and
// every declaration is of a write the code makes: a write another
// controller must act on cannot land without its wake being thought of.
func TestHandoffsMatchCode(t *testing.T) {
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	s := scan(t, ".", scheme)
	code := s.handoffWrites()
	if len(s.errs) > 0 {
		t.Fatalf("the scan cannot tell which package makes these writes:\n%s", strings.Join(s.errs, "\n"))
	}

	declared := map[handoffKey]bool{}
	var problems []string
	for _, h := range controller.Handoffs {
		k := handoffKey{writer: h.Writer, resource: h.Resource}
		if declared[k] {
			problems = append(problems, fmt.Sprintf("Handoffs declares %s twice: merge the entries", k))
		}
		declared[k] = true
		problems = append(problems, malformed(h)...)
		if _, ok := code[k]; !ok {
			problems = append(problems, fmt.Sprintf("Handoffs declares that %s, which no code does: remove the entry, or correct its Writer or Resource", k))
		}
	}
	for k, at := range code {
		if !declared[k] {
			slices.Sort(at)
			problems = append(problems, fmt.Sprintf("%s (at %s): declare it in Handoffs with its consumer and how the consumer is woken",
				k, strings.Join(slices.Compact(at), ", ")))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Errorf("the hand-offs declared in handoffs.go do not match the code:\n  %s", strings.Join(problems, "\n  "))
	}
}

// malformed says what a Handoffs entry lacks.
func malformed(h controller.Handoff) []string {
	var out []string
	k := handoffKey{writer: h.Writer, resource: h.Resource}
	if h.What == "" {
		out = append(out, fmt.Sprintf("Handoffs entry %s: say in What which part it writes", k))
	}
	switch {
	case len(h.Wakes) == 0 && h.NoConsumer == "":
		out = append(out, fmt.Sprintf("Handoffs entry %s: name in Wakes who acts on it and how they are woken, or say in NoConsumer why nobody does", k))
	case len(h.Wakes) > 0 && h.NoConsumer != "":
		out = append(out, fmt.Sprintf("Handoffs entry %s: has both Wakes and NoConsumer; keep the one that is true", k))
	}
	for _, w := range h.Wakes {
		if w.Consumer == "" || w.By == "" {
			out = append(out, fmt.Sprintf("Handoffs entry %s: a Wake needs both its Consumer and By (%+v)", k, w))
		}
	}
	return out
}

// writeVerbs change what another controller may read.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// notHandedOff are the resources written that no controller reads, and why.
var notHandedOff = map[string]string{
	"events": "Events (core or events.k8s.io) are for people; no controller watches or reads them",
	// The metrics endpoint's authentication filter.
	"tokenreviews":         "a review is a question to the API server, and nothing is stored",
	"subjectaccessreviews": "a review is a question to the API server, and nothing is stored",
}

// helperPackages write for the packages that call them: clusterstatus's
// Update for whoever changes a few status fields of a cluster, finalizer's
// Set for whoever holds an object.
var helperPackages = map[string]bool{"clusterstatus": true, "finalizer": true}

// handoffKey is a Handoffs entry's identity: a package's writes of one
// resource.
type handoffKey struct{ writer, resource string }

func (k handoffKey) String() string { return k.writer + " writes " + k.resource }

// handoffWrites are the scan's writes by the package that makes them, with
// where in it.
func (s *scanner) handoffWrites() map[handoffKey][]string {
	out := map[handoffKey][]string{}
	for g, sites := range s.sites {
		if !writeVerbs[g.verb] || notHandedOff[g.resource] != "" {
			continue
		}
		for _, x := range sites {
			for writer, at := range s.writers(x) {
				k := handoffKey{writer: writer, resource: g.resource}
				out[k] = append(out[k], at...)
			}
		}
	}
	return out
}

// writers are the packages a write is made for, each with the places in
// it: the call's own package, unless that is a helper; then the package
// that handed the helper the object; for an object of the helper's own,
// the first callers outside the helpers.
func (s *scanner) writers(x site) map[string][]string {
	out := map[string][]string{}
	switch {
	case !helperPackages[s.dir(x.at)]:
		out[s.dir(x.at)] = []string{s.pos(x.at)}
	case !helperPackages[s.dir(x.from)]:
		out[s.dir(x.from)] = []string{s.pos(x.from)}
	default:
		s.callersOutsideHelpers(x.from, out, map[*types.Func]bool{})
	}
	return out
}

func (s *scanner) callersOutsideHelpers(n ast.Node, out map[string][]string, seen map[*types.Func]bool) {
	fn := s.enclosingFunc(n)
	if fn == nil {
		s.fail(n, "a write outside any function")
		return
	}
	if seen[fn] {
		return
	}
	seen[fn] = true
	var calls []*ast.CallExpr
	for callee, cs := range s.calls {
		if callee.Origin() == fn {
			calls = append(calls, cs...)
		}
	}
	if len(calls) == 0 {
		s.fail(n, "%s writes for its callers, and nothing calls it", fn.FullName())
		return
	}
	for _, call := range calls {
		if d := s.dir(call); !helperPackages[d] {
			out[d] = append(out[d], s.pos(call))
		} else {
			s.callersOutsideHelpers(call, out, seen)
		}
	}
}

// enclosingFunc is the declared function n is in, nil outside any.
func (s *scanner) enclosingFunc(n ast.Node) *types.Func {
	for _, fd := range s.funcs {
		if fd.Pos() <= n.Pos() && n.Pos() < fd.End() {
			fn, _ := s.info.Defs[fd.Name].(*types.Func)
			return fn
		}
	}
	return nil
}

// dir is the package directory of n under the directory scanned,
// "controller" for that directory itself.
func (s *scanner) dir(n ast.Node) string {
	rel, err := filepath.Rel(s.root, filepath.Dir(s.fset.Position(n.Pos()).Filename))
	if err != nil || rel == "." {
		return "controller"
	}
	return filepath.ToSlash(rel)
}
