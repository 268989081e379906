package render

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const (
	pkgValkey  = "github.com/gomomento/valkey-operator/internal/valkey"
	pkgBuilder = "github.com/valkey-io/valkey-go/internal/cmds"
)

// operatorPackages are the packages, with those under them, whose calls
// to a valkey.Node are the operator's: its controllers and its command
// line. Tests connect as other users; any other package that starts
// talking to Valkey fails the test until it is listed here or in
// otherClients.
var operatorPackages = []string{
	"github.com/gomomento/valkey-operator/internal/controller",
	"github.com/gomomento/valkey-operator/internal/operatorcmd",
}

// otherClients are packages that talk to Valkey as a user of their own:
// restore drives a scratch server (the loader) as that server's default
// user; the fleet benchmark's ping loop, the nodes' default user; the
// tests' convergence check (testenv), whichever user its caller dials.
var otherClients = []string{
	"github.com/gomomento/valkey-operator/internal/restore",
	"github.com/gomomento/valkey-operator/bench/pingloop",
	"github.com/gomomento/valkey-operator/internal/testenv",
}

// clientCommands are what valkey-go sends by itself on a connection the
// operator opens with valkey.Dial (HELLO and AUTH need no grant).
var clientCommands = []string{"ping"} // its keep-alive

// impliedGrants are what a command needs beyond itself: MIGRATE reads and
// deletes the keys it moves and authenticates on the target as the same
// user, where it sends SELECT and RESTORE-ASKING.
var impliedGrants = map[string][]string{"migrate": {"~*", "restore-asking", "select"}}

// The operator user's grants are exactly what the operator's code sends to
// Valkey: a command the code starts sending must come with its grant, and
// a grant the code stops using must go. The commands are read from the
// code: every valkey-go builder chain and Arbitrary call in package valkey,
// attributed to the Node methods that build them, and the Node methods the
// operator's packages call.
func TestOperatorGrantsMatchCode(t *testing.T) {
	code := operatorCommands(t)
	granted := map[string][]string{}
	for _, version := range []string{"8.0.1", "8.0.3", "9.0.0"} {
		operator, _, err := systemGrantsFor(version)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range operator {
			granted[grantName(t, g)] = append(granted[grantName(t, g)], version)
		}
	}
	var missing, unused []string
	for c, where := range code {
		if _, ok := granted[c]; !ok {
			missing = append(missing, fmt.Sprintf("  %s (sent by %s)", c, strings.Join(where, ", ")))
		}
	}
	for g, versions := range granted {
		if _, ok := code[g]; !ok {
			unused = append(unused, fmt.Sprintf("  %s (granted on %s)", g, strings.Join(versions, ", ")))
		}
	}
	sort.Strings(missing)
	sort.Strings(unused)
	if len(missing) > 0 {
		t.Errorf("the operator sends what %s may not run; add it to operatorGrants:\n%s", OperatorUser, strings.Join(missing, "\n"))
	}
	if len(unused) > 0 {
		t.Errorf("%s is granted what the operator never sends; remove it:\n%s", OperatorUser, strings.Join(unused, "\n"))
	}
	if t.Failed() {
		var all []string
		for c := range code {
			all = append(all, c)
		}
		sort.Strings(all)
		t.Logf("what the code sends: %s", strings.Join(all, " "))
	}
}

// grantName is a grant's command as the scan names it ("cluster|meet",
// "migrate"), or the key pattern "~*"; a category or a deny would grant
// more than a command list can check.
func grantName(t *testing.T, g string) string {
	t.Helper()
	switch {
	case g == "~*":
		return g
	case strings.HasPrefix(g, "+") && !strings.HasPrefix(g, "+@"):
		return g[1:]
	}
	t.Fatalf("grant %q: the operator's grants are single commands and ~*", g)
	return ""
}

// operatorCommands are the commands the operator's packages send, each
// with the Node methods that send it.
func operatorCommands(t *testing.T) map[string][]string {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  "../..",
	}, "./...")
	if err != nil {
		t.Fatalf("loading packages: %v", err)
	}
	var vk *packages.Package
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("loading %s: %v", p.PkgPath, p.Errors)
		}
		if p.PkgPath == pkgValkey {
			vk = p
		}
	}
	if vk == nil {
		t.Fatalf("package %s not loaded", pkgValkey)
	}
	sent := commandsByFunc(t, vk, builderCommands(t))

	out := map[string][]string{}
	add := func(cmd, where string) {
		if !slices.Contains(out[cmd], where) {
			out[cmd] = append(out[cmd], where)
		}
		for _, g := range impliedGrants[cmd] {
			if !slices.Contains(out[g], where) {
				out[g] = append(out[g], where)
			}
		}
	}
	var strays []string
	for _, p := range pkgs {
		if p == vk || slices.Contains(otherClients, p.PkgPath) {
			continue
		}
		operator := slices.ContainsFunc(operatorPackages, func(op string) bool {
			return p.PkgPath == op || strings.HasPrefix(p.PkgPath, op+"/")
		})
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fn := calleeFunc(p.TypesInfo, call)
				if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != pkgValkey {
					return true
				}
				where := "valkey." + fn.Name()
				if recv := fn.Signature().Recv(); recv != nil {
					where = "Node." + fn.Name()
				}
				if !operator {
					if len(sent[fn]) > 0 || fn.Name() == "Dial" {
						strays = append(strays, fmt.Sprintf("  %s: %s", p.Fset.Position(call.Pos()), where))
					}
					return true
				}
				for _, c := range sent[fn] {
					add(c, where)
				}
				if fn.Name() == "Dial" && fn.Signature().Recv() == nil {
					for _, c := range clientCommands {
						add(c, "valkey-go, after valkey.Dial")
					}
				}
				return true
			})
		}
	}
	if len(strays) > 0 {
		t.Fatalf("packages outside operatorPackages talk to Valkey; list each in operatorPackages or otherClients:\n%s", strings.Join(strays, "\n"))
	}
	if len(out) == 0 {
		t.Fatal("the scan found no command the operator sends")
	}
	return out
}

// commandsByFunc maps each function of package valkey to the commands it
// builds, directly or through the package's other functions it calls.
func commandsByFunc(t *testing.T, p *packages.Package, builder map[string][]string) map[*types.Func][]string {
	t.Helper()
	direct := map[*types.Func][]string{}
	calls := map[*types.Func][]*types.Func{}
	var errs []string
	for _, f := range p.Syntax {
		for _, d := range f.Decls {
			decl, ok := d.(*ast.FuncDecl)
			if !ok || decl.Body == nil {
				continue
			}
			fn, _ := p.TypesInfo.Defs[decl.Name].(*types.Func)
			if fn == nil {
				continue
			}
			ast.Inspect(decl.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				callee := calleeFunc(p.TypesInfo, call)
				if callee == nil || callee.Pkg() == nil {
					return true
				}
				switch {
				case callee.Pkg() == p.Types:
					calls[fn] = append(calls[fn], callee)
				case callee.Pkg().Path() == pkgBuilder && isBuilderMethod(callee):
					var tokens []string
					if callee.Name() == "Arbitrary" {
						for _, a := range call.Args {
							v := p.TypesInfo.Types[a].Value
							if v == nil || v.Kind() != constant.String {
								errs = append(errs, fmt.Sprintf("%s: Arbitrary with a command that is not a constant", p.Fset.Position(a.Pos())))
								return true
							}
							tokens = append(tokens, constant.StringVal(v))
						}
					} else if tokens = builder[callee.Name()]; tokens == nil {
						errs = append(errs, fmt.Sprintf("%s: no command found for Builder.%s", p.Fset.Position(call.Pos()), callee.Name()))
						return true
					}
					direct[fn] = append(direct[fn], commandName(tokens))
				}
				return true
			})
		}
	}
	if len(errs) > 0 {
		t.Fatalf("the scan cannot tell what these calls send:\n%s", strings.Join(errs, "\n"))
	}
	out := map[*types.Func][]string{}
	var visit func(fn *types.Func, seen map[*types.Func]bool) []string
	visit = func(fn *types.Func, seen map[*types.Func]bool) []string {
		if seen[fn] {
			return nil
		}
		seen[fn] = true
		cmds := slices.Clone(direct[fn])
		for _, c := range calls[fn] {
			cmds = append(cmds, visit(c, seen)...)
		}
		return cmds
	}
	for fn := range direct {
		out[fn] = nil
	}
	for fn := range calls {
		out[fn] = nil
	}
	for fn := range out {
		cmds := visit(fn, map[*types.Func]bool{})
		slices.Sort(cmds)
		out[fn] = slices.Compact(cmds)
	}
	return out
}

// commandName is how an ACL rule names a command built from tokens: the
// command, with its subcommand when the builder gives one.
func commandName(tokens []string) string {
	name := strings.ToLower(tokens[0])
	if len(tokens) > 1 {
		name += "|" + strings.ToLower(tokens[1])
	}
	return name
}

func isBuilderMethod(fn *types.Func) bool {
	recv := fn.Signature().Recv()
	if recv == nil {
		return false
	}
	named, ok := types.Unalias(recv.Type()).(*types.Named)
	return ok && named.Obj().Name() == "Builder"
}

func calleeFunc(info *types.Info, call *ast.CallExpr) *types.Func {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		fn, _ := info.Uses[f].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := info.Uses[f.Sel].(*types.Func)
		return fn
	}
	return nil
}

// builderCommands reads valkey-go's generated builder: each method of
// Builder starts a command by appending its name tokens, as in
// c.cs.s = append(c.cs.s, "CLUSTER", "MEET").
func builderCommands(t *testing.T) map[string][]string {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedFiles, Dir: "../.."}, pkgBuilder)
	if err != nil || len(pkgs) != 1 || len(pkgs[0].GoFiles) == 0 {
		t.Fatalf("locating %s: %v", pkgBuilder, err)
	}
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, path := range pkgs[0].GoFiles {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		for _, d := range f.Decls {
			decl, ok := d.(*ast.FuncDecl)
			if !ok || decl.Recv == nil || len(decl.Recv.List) != 1 || decl.Body == nil {
				continue
			}
			if id, ok := decl.Recv.List[0].Type.(*ast.Ident); !ok || id.Name != "Builder" {
				continue
			}
			ast.Inspect(decl.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || out[decl.Name.Name] != nil {
					return true
				}
				if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "append" {
					return true
				}
				var tokens []string
				for _, a := range call.Args[1:] {
					lit, ok := a.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return true
					}
					tokens = append(tokens, strings.Trim(lit.Value, "\"`"))
				}
				if len(tokens) > 0 {
					out[decl.Name.Name] = tokens
				}
				return true
			})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no Builder method found in %s", pkgBuilder)
	}
	return out
}

// The scan's rules on what valkey-go's builder names.
func TestBuilderCommands(t *testing.T) {
	got := builderCommands(t)
	for method, want := range map[string]string{
		"ClusterMeet":              "cluster|meet",
		"ClusterSetslot":           "cluster|setslot",
		"ClusterGetslotmigrations": "cluster|getslotmigrations",
		"AclLoad":                  "acl|load",
		"ConfigSet":                "config|set",
		"Info":                     "info",
		"Ping":                     "ping",
	} {
		if tokens := got[method]; tokens == nil || commandName(tokens) != want {
			t.Errorf("Builder.%s sends %q, want %s", method, tokens, want)
		}
	}
}
