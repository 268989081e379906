package controller_test

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// grant is one verb on one resource of one API group, as a ClusterRole
// rule spells it ("" is the core group; subresources as "pods/status").
type grant struct{ group, resource, verb string }

func (g grant) String() string {
	group := g.group
	if group == "" {
		group = "core"
	}
	return group + " " + g.resource + " " + g.verb
}

const (
	pkgClient  = "sigs.k8s.io/controller-runtime/pkg/client"
	pkgBuilder = "sigs.k8s.io/controller-runtime/pkg/builder"
	pkgSource  = "sigs.k8s.io/controller-runtime/pkg/source"
	pkgCluster = "sigs.k8s.io/controller-runtime/pkg/cluster"
	pkgFilters = "sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	// The events.k8s.io recorder's interface is declared here; package
	// tools/events only aliases it.
	pkgEvents     = "k8s.io/client-go/tools/internal/events"
	pkgRecord     = "k8s.io/client-go/tools/record"
	pkgTypedPfx   = "k8s.io/client-go/kubernetes/typed/"
	pkgAPIPfx     = "k8s.io/api/"
	verbsOfReader = "Get List"
)

// scanCalls type-checks the non-test files of the package in dir and of
// every package under it, and returns every grant their calls to the
// Kubernetes API need, with where each is needed. The rules:
//
//   - a controller-runtime client's Create, Update, Patch, Delete and
//     DeleteAllOf need that verb on the object's resource (through Status()
//     on its status subresource);
//   - Get and List through the manager's client read its cache, whose
//     informer needs list and watch; through the API reader (GetAPIReader)
//     they need get or list;
//   - For, Owns and Watches of a controller builder, source.Kind and
//     IndexField start an informer: list and watch;
//   - an events.k8s.io EventRecorder creates and patches events (a
//     client-go record.EventRecorder the core group's);
//   - a typed clientset's method needs the verb it is named for;
//   - the metrics endpoint's authentication filter creates TokenReviews and
//     SubjectAccessReviews.
//
// An object whose type is an interface is followed to the values that flow
// into it (a parameter to its callers' arguments, a variable or field to
// what is assigned to it, a range variable to the literal ranged over), as
// is the client a read goes through. A call the scan cannot follow fails
// the test, so that nothing the code does goes unnoticed.
func scanCalls(t *testing.T, dir string, scheme *runtime.Scheme) map[grant][]string {
	t.Helper()
	return scan(t, dir, scheme).found
}

// scan is scanCalls keeping the scanner, whose sites say where each grant
// is needed and for what object.
func scan(t *testing.T, dir string, scheme *runtime.Scheme) *scanner {
	t.Helper()
	pkgs, err := loadTree(dir)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &scanner{
		root:   root,
		fset:   pkgs[0].Fset,
		info:   mergedInfo(pkgs),
		ours:   map[*types.Package]bool{},
		kinds:  map[string]schema.GroupVersionKind{},
		params: map[*types.Var]param{},
		calls:  map[*types.Func][]*ast.CallExpr{},
		writes: map[*types.Var][]ast.Expr{},
		found:  map[grant][]string{},
		sites:  map[grant][]site{},
	}
	var files []*ast.File
	for _, p := range pkgs {
		s.ours[p.Types] = true
		files = append(files, p.Syntax...)
	}
	for gvk, typ := range scheme.AllKnownTypes() {
		s.kinds[typ.PkgPath()+"."+typ.Name()] = gvk
	}
	for _, f := range files {
		ast.Inspect(f, s.index)
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				s.call(call)
			}
			return true
		})
	}
	scanUses(s)
	if len(s.errs) > 0 {
		t.Fatalf("the scan cannot tell what these calls need:\n%s", strings.Join(s.errs, "\n"))
	}
	return s
}

// loadTree type-checks the non-test files of the package in dir and of
// every package under it. Its dependencies are type-checked from source
// too, so that a function of one package called from another is one
// object, and its callers' arguments are followed; their function bodies
// are skipped, as only their signatures matter.
func loadTree(dir string) ([]*packages.Package, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo |
			packages.NeedImports | packages.NeedDeps,
		Dir: dir,
		ParseFile: func(fset *token.FileSet, name string, src []byte) (*ast.File, error) {
			if strings.HasPrefix(name, abs+string(filepath.Separator)) {
				return parser.ParseFile(fset, name, src, parser.ParseComments)
			}
			f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
			if f != nil {
				for _, d := range f.Decls {
					if fd, ok := d.(*ast.FuncDecl); ok {
						fd.Body = nil
					}
				}
			}
			return f, err
		},
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no packages")
	}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("package %s: %v", p.PkgPath, p.Errors)
		}
	}
	return pkgs, nil
}

// mergedInfo is one lookup over the type information of every package.
func mergedInfo(pkgs []*packages.Package) *types.Info {
	out := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
		Instances:  map[*ast.Ident]types.Instance{},
	}
	for _, p := range pkgs {
		maps.Copy(out.Types, p.TypesInfo.Types)
		maps.Copy(out.Defs, p.TypesInfo.Defs)
		maps.Copy(out.Uses, p.TypesInfo.Uses)
		maps.Copy(out.Selections, p.TypesInfo.Selections)
		maps.Copy(out.Instances, p.TypesInfo.Instances)
	}
	return out
}

type param struct {
	fn    *types.Func
	index int
}

type scanner struct {
	root   string // the directory scanned
	fset   *token.FileSet
	info   *types.Info                        // of every package scanned
	ours   map[*types.Package]bool            // the packages scanned
	kinds  map[string]schema.GroupVersionKind // by "import/path.TypeName"
	params map[*types.Var]param               // a function's parameters, to follow to its callers
	calls  map[*types.Func][]*ast.CallExpr    // the calls of each function of the package
	writes map[*types.Var][]ast.Expr          // what is stored in each variable or field
	found  map[grant][]string                 // where each grant is needed, as file:line
	sites  map[grant][]site                   // the same calls, with the object each is for
	funcs  []*ast.FuncDecl                    // every function declared, to find the one a call is in
	errs   []string
}

// A site is one call needing a grant. from is where the type of the object
// it is for is known (the call itself when it is not for an object): a
// helper writing an object it is handed writes for the code that hands it.
type site struct{ at, from ast.Node }

func (s *scanner) pos(n ast.Node) string {
	p := s.fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", p.Filename[strings.LastIndex(p.Filename, "/")+1:], p.Line)
}

func (s *scanner) fail(n ast.Node, format string, args ...any) {
	s.errs = append(s.errs, s.pos(n)+": "+fmt.Sprintf(format, args...))
}

// index records parameters, call sites and stores.
func (s *scanner) index(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.FuncDecl:
		s.funcs = append(s.funcs, n)
		fn, _ := s.info.Defs[n.Name].(*types.Func)
		i := 0
		for _, field := range n.Type.Params.List {
			for _, name := range field.Names {
				if v, ok := s.info.Defs[name].(*types.Var); ok && fn != nil {
					s.params[v] = param{fn: fn, index: i}
				}
				i++
			}
			if len(field.Names) == 0 {
				i++
			}
		}
	case *ast.CallExpr:
		if fn := s.callee(n); fn != nil && s.ours[fn.Pkg()] {
			s.calls[fn] = append(s.calls[fn], n)
		}
	case *ast.CompositeLit:
		for _, elt := range n.Elts {
			if kv, ok := elt.(*ast.KeyValueExpr); ok {
				if key, ok := kv.Key.(*ast.Ident); ok {
					if v, ok := s.info.Uses[key].(*types.Var); ok && v.IsField() {
						s.writes[v] = append(s.writes[v], kv.Value)
					}
				}
			}
		}
	case *ast.AssignStmt:
		if len(n.Lhs) == len(n.Rhs) {
			for i, lhs := range n.Lhs {
				if v := s.variable(lhs); v != nil {
					s.writes[v] = append(s.writes[v], n.Rhs[i])
				}
			}
		}
	case *ast.ValueSpec:
		if len(n.Names) == len(n.Values) {
			for i, name := range n.Names {
				if v, ok := s.info.Defs[name].(*types.Var); ok {
					s.writes[v] = append(s.writes[v], n.Values[i])
				}
			}
		}
	case *ast.RangeStmt:
		lit, ok := ast.Unparen(n.X).(*ast.CompositeLit)
		if id, isIdent := n.Value.(*ast.Ident); ok && isIdent {
			if v, ok := s.info.Defs[id].(*types.Var); ok {
				s.writes[v] = append(s.writes[v], lit.Elts...)
			}
		}
	}
	return true
}

func (s *scanner) variable(e ast.Expr) *types.Var {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		if v, ok := s.info.Defs[e].(*types.Var); ok {
			return v
		}
		v, _ := s.info.Uses[e].(*types.Var)
		return v
	case *ast.SelectorExpr:
		v, _ := s.info.Uses[e.Sel].(*types.Var)
		return v
	}
	return nil
}

// callee is the function or method a call calls, nil for a conversion, a
// builtin or a function value.
func (s *scanner) callee(call *ast.CallExpr) *types.Func {
	fun := ast.Unparen(call.Fun)
	if ix, ok := fun.(*ast.IndexExpr); ok {
		fun = ix.X
	}
	switch f := fun.(type) {
	case *ast.Ident:
		fn, _ := s.info.Uses[f].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := s.info.Uses[f.Sel].(*types.Func)
		return fn
	}
	return nil
}

// flowsInto returns the expressions whose values e may hold when e's type
// is an interface: the arguments of its function's callers for a
// parameter, what is stored in a variable or field. ok is false when e
// cannot be followed.
func (s *scanner) flowsInto(e ast.Expr) (from []ast.Expr, ok bool) {
	v := s.variable(e)
	if v == nil {
		return nil, false
	}
	if p, isParam := s.params[v]; isParam {
		for _, call := range s.calls[p.fn] {
			args := call.Args
			if sel, isSel := ast.Unparen(call.Fun).(*ast.SelectorExpr); isSel {
				// A method expression T.m passes the receiver first.
				if s.info.Selections[sel] != nil && s.info.Selections[sel].Kind() == types.MethodExpr {
					args = args[1:]
				}
			}
			if p.index < len(args) {
				from = append(from, args[p.index])
			}
		}
		return from, len(from) > 0
	}
	return s.writes[v], len(s.writes[v]) > 0
}

// typed is a concrete type an object may have, and the expression that
// has it.
type typed struct {
	t    types.Type
	from ast.Expr
}

// objectTypes are the concrete types an object argument may have.
func (s *scanner) objectTypes(e ast.Expr, depth int) []typed {
	t := s.info.TypeOf(e)
	if t != nil && !types.IsInterface(t) {
		return []typed{{t, e}}
	}
	if tp, isParam := t.(*types.TypeParam); isParam {
		if args := s.typeArgs(tp, 0); len(args) > 0 {
			out := make([]typed, len(args))
			for i, a := range args {
				out[i] = typed{a, e}
			}
			return out
		}
	}
	from, ok := s.flowsInto(e)
	if !ok || depth > 8 {
		s.fail(e, "cannot tell the type of object %s", types.ExprString(e))
		return nil
	}
	var out []typed
	for _, f := range from {
		out = append(out, s.objectTypes(f, depth+1)...)
	}
	return out
}

// typeArgs are the concrete types type parameter tp is instantiated with,
// following a generic function that passes its own type parameters on.
func (s *scanner) typeArgs(tp *types.TypeParam, depth int) []types.Type {
	var out []types.Type
	for id, inst := range s.info.Instances {
		i := typeParamIndex(s.info.Uses[id], tp)
		if i < 0 || i >= inst.TypeArgs.Len() || inst.TypeArgs.At(i) == tp {
			continue
		}
		arg := inst.TypeArgs.At(i)
		if argParam, isParam := arg.(*types.TypeParam); isParam {
			if depth < 8 {
				out = append(out, s.typeArgs(argParam, depth+1)...)
			}
			continue
		}
		out = append(out, arg)
	}
	return out
}

// typeParamIndex is tp's position among the type parameters of generic
// function or type obj, a method's receiver type parameters counting as
// its type's; -1 when tp is not one of them.
func typeParamIndex(obj types.Object, tp *types.TypeParam) int {
	var lists []*types.TypeParamList
	switch o := obj.(type) {
	case *types.Func:
		lists = append(lists, o.Type().(*types.Signature).TypeParams())
	case *types.TypeName:
		if named, isNamed := o.Type().(*types.Named); isNamed {
			lists = append(lists, named.TypeParams())
			for m := range named.Methods() {
				lists = append(lists, m.Type().(*types.Signature).RecvTypeParams())
			}
		}
	}
	for _, l := range lists {
		for i := range l.Len() {
			if l.At(i) == tp {
				return i
			}
		}
	}
	return -1
}

// readsCache tells, for each client value a reader expression may hold,
// whether it reads the manager's cache (true) or the API server (false).
func (s *scanner) readsCache(e ast.Expr, depth int) []bool {
	if t := s.info.TypeOf(e); t != nil && !types.IsInterface(t) {
		// A reconciler passed as the reader reads through its embedded client.
		_, index, _ := types.LookupFieldOrMethod(t, true, nil, "Get")
		if len(index) > 1 {
			return s.embeddedOrigins(e, t, index)
		}
	}
	if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
		if fn := s.callee(call); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == pkgCluster {
			switch fn.Name() {
			case "GetClient":
				return []bool{true}
			case "GetAPIReader":
				return []bool{false}
			}
		}
		s.fail(e, "cannot tell whether reader %s is cached", types.ExprString(e))
		return nil
	}
	from, ok := s.flowsInto(e)
	if !ok || depth > 8 {
		s.fail(e, "cannot tell whether reader %s is cached", types.ExprString(e))
		return nil
	}
	var out []bool
	for _, f := range from {
		out = append(out, s.readsCache(f, depth+1)...)
	}
	return out
}

// receiverOrigins is readsCache for the receiver of method call sel.
func (s *scanner) receiverOrigins(sel *ast.SelectorExpr) []bool {
	selection := s.info.Selections[sel]
	if selection == nil || len(selection.Index()) == 1 {
		return s.readsCache(sel.X, 0)
	}
	return s.embeddedOrigins(sel, selection.Recv(), selection.Index())
}

// embeddedOrigins follows a method promoted from an embedded client (path
// index from type t) to what is stored in that field.
func (s *scanner) embeddedOrigins(n ast.Node, t types.Type, index []int) []bool {
	var field *types.Var
	for _, i := range index[:len(index)-1] {
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			s.fail(n, "cannot follow the embedded client of %s", t)
			return nil
		}
		field = st.Field(i)
		t = field.Type()
	}
	if field == nil || len(s.writes[field]) == 0 {
		s.fail(n, "nothing is stored in the embedded client of %s", t)
		return nil
	}
	var out []bool
	for _, w := range s.writes[field] {
		out = append(out, s.readsCache(w, 0)...)
	}
	return out
}

// resource maps a Go type of the scheme (or its List) to its resource.
func (s *scanner) resource(n ast.Node, t types.Type) (group, resource string, ok bool) {
	if p, isPtr := t.(*types.Pointer); isPtr {
		t = p.Elem()
	}
	named, isNamed := t.(*types.Named)
	if !isNamed || named.Obj().Pkg() == nil {
		s.fail(n, "object of type %s is not a Kubernetes kind", t)
		return "", "", false
	}
	return s.resourceOf(n, named.Obj().Pkg().Path(), named.Obj().Name())
}

func (s *scanner) resourceOf(n ast.Node, pkgPath, name string) (group, resource string, ok bool) {
	gvk, known := s.kinds[pkgPath+"."+name]
	if !known {
		s.fail(n, "type %s.%s is not in the operator's scheme", pkgPath, name)
		return "", "", false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return gvk.Group, plural.Resource, true
}

func (s *scanner) need(n ast.Node, group, resource string, verbs ...string) {
	s.needFor(site{at: n, from: n}, group, resource, verbs...)
}

func (s *scanner) needFor(x site, group, resource string, verbs ...string) {
	for _, v := range verbs {
		g := grant{group: group, resource: resource, verb: v}
		s.found[g] = append(s.found[g], s.pos(x.at))
		s.sites[g] = append(s.sites[g], x)
	}
}

func (s *scanner) needOn(n ast.Node, obj ast.Expr, sub string, verbs ...string) {
	for _, o := range s.objectTypes(obj, 0) {
		if group, res, ok := s.resource(n, o.t); ok {
			if sub != "" {
				res += "/" + sub
			}
			s.needFor(site{at: n, from: o.from}, group, res, verbs...)
		}
	}
}

// call applies the rules to one call.
func (s *scanner) call(call *ast.CallExpr) {
	fn := s.callee(call)
	if fn == nil || fn.Pkg() == nil {
		return
	}
	sel, _ := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	path, name := fn.Pkg().Path(), fn.Name()
	recv := ""
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		if named, ok := types.Unalias(sig.Recv().Type()).(*types.Named); ok {
			recv = named.Obj().Name()
		} else if p, ok := sig.Recv().Type().(*types.Pointer); ok {
			if named, ok := p.Elem().(*types.Named); ok {
				recv = named.Obj().Name()
			}
		}
	}
	switch {
	case path == pkgClient && recv == "SubResourceWriter":
		sub := s.subresource(sel)
		switch name {
		case "Create", "Update", "Patch":
			s.needOn(call, call.Args[1], sub, strings.ToLower(name))
		default:
			s.fail(call, "unknown subresource call %s", name)
		}
	case path == pkgClient && recv != "" && strings.Contains(verbsOfReader, name):
		obj := call.Args[1]
		if name == "Get" {
			obj = call.Args[2]
		}
		for _, cached := range s.receiverOrigins(sel) {
			if cached {
				s.needOn(call, obj, "", "list", "watch")
			} else {
				s.needOn(call, obj, "", strings.ToLower(name))
			}
		}
	case path == pkgClient && recv != "":
		switch name {
		case "Create", "Update", "Patch", "Delete":
			s.needOn(call, call.Args[1], "", strings.ToLower(name))
		case "DeleteAllOf":
			s.needOn(call, call.Args[1], "", "deletecollection")
		case "Apply":
			s.fail(call, "server-side apply of an apply configuration: add a rule for it")
		case "IndexField":
			s.needOn(call, call.Args[1], "", "list", "watch")
		case "Status", "SubResource", "Scheme", "RESTMapper", "GroupVersionKindFor", "IsObjectNamespaced":
		default:
			s.fail(call, "unknown client method %s.%s", recv, name)
		}
	case path == pkgBuilder && (name == "For" || name == "Owns" || name == "Watches" || name == "WatchesMetadata"):
		s.needOn(call, call.Args[0], "", "list", "watch")
	case path == pkgSource && (name == "Kind" || name == "TypedKind"):
		s.needOn(call, call.Args[1], "", "list", "watch")
	case path == pkgEvents && recv == "EventRecorder":
		s.need(call, "events.k8s.io", "events", "create", "patch")
	case path == pkgRecord && recv == "EventRecorder":
		s.need(call, "", "events", "create", "patch")
	case strings.HasPrefix(path, pkgTypedPfx) && isGetter(fn):
		// CoreV1().Secrets(ns) only names the client that then calls.
	case strings.HasPrefix(path, pkgTypedPfx) && strings.HasSuffix(recv, "Interface"):
		group, res, ok := s.resourceOf(call, pkgAPIPfx+strings.TrimPrefix(path, pkgTypedPfx), strings.TrimSuffix(recv, "Interface"))
		if !ok {
			return
		}
		verb, found := typedVerbs[name]
		if !found {
			s.fail(call, "unknown clientset method %s.%s", recv, name)
			return
		}
		if strings.HasSuffix(name, "Status") {
			res += "/status"
		}
		s.need(call, group, res, verb)
	case path == pkgFilters && name == "WithAuthenticationAndAuthorization":
		// Referenced, not called: see uses.
	}
}

// isGetter is a clientset method that returns another client.
func isGetter(fn *types.Func) bool {
	res := fn.Type().(*types.Signature).Results()
	if res.Len() != 1 {
		return false
	}
	named, ok := types.Unalias(res.At(0).Type()).(*types.Named)
	return ok && types.IsInterface(named) && named.Obj().Pkg() != nil && strings.HasPrefix(named.Obj().Pkg().Path(), pkgTypedPfx)
}

var typedVerbs = map[string]string{
	"Get": "get", "List": "list", "Watch": "watch", "Create": "create", "Update": "update",
	"UpdateStatus": "update", "Patch": "patch", "Delete": "delete", "DeleteCollection": "deletecollection",
	"Apply": "patch", "ApplyStatus": "patch",
}

// subresource is the subresource a SubResourceWriter was obtained for:
// c.Status() or c.SubResource("name").
func (s *scanner) subresource(sel *ast.SelectorExpr) string {
	if sel != nil {
		if call, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok {
			if fn := s.callee(call); fn != nil {
				switch fn.Name() {
				case "Status":
					return "status"
				case "SubResource":
					if tv, ok := s.info.Types[call.Args[0]]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
						return constant.StringVal(tv.Value)
					}
				}
			}
		}
	}
	s.fail(sel, "cannot tell the subresource of %s", types.ExprString(sel))
	return ""
}

// uses applies the rules that a reference, not a call, triggers.
func scanUses(s *scanner) {
	for id, obj := range s.info.Uses {
		if fn, ok := obj.(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == pkgFilters && fn.Name() == "WithAuthenticationAndAuthorization" {
			s.need(id, "authentication.k8s.io", "tokenreviews", "create")
			s.need(id, "authorization.k8s.io", "subjectaccessreviews", "create")
		}
	}
}

// sortedGrants lists a set for a failure message.
func sortedGrants[V any](m map[grant]V) []string {
	out := make([]string, 0, len(m))
	for g := range m {
		out = append(out, g.String())
	}
	sort.Strings(out)
	return out
}
