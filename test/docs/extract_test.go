package docs

// Extraction of the names the reference pages must list, from the Go source
// with go/parser and go/ast (no list is kept by hand):
//
//   - metrics: the string constants of the const block documented "Metric
//     names" in shared/metrics (cross-checked against metrics.Definitions);
//   - event reasons: the reason argument of every Kubernetes event the
//     product records, i.e. of every call to a function or method named
//     Event, Eventf, NodeEvent or event with five or more arguments, or
//     whose third argument is corev1.EventTypeNormal or EventTypeWarning
//     (ctx, object, type, reason, message). A string literal is a reason, and
//     so is a string constant (of the package, or pkg.Name of another
//     package of the module, or a conversion of one); a parameter of the
//     enclosing function is a wrapper forwarding its caller's reason (the
//     caller is a call found the same way); a conversion string(x.F) of a
//     struct field stands for every constant of F's named string type
//     declared in the package; anything else fails the test;
//   - environment variables: the string constants named Env* or env* and the
//     literal (or constant) arguments of calls to Getenv, getenv or
//     LookupEnv, in the product's trees (cmd, functions, infra, shared);
//   - CDK context keys: the literal first argument of the context reader's
//     methods (str, list, boolean, number) and the string keys of map
//     literals in its props method, in infra's package main;
//   - CLI flags: per flag.NewFlagSet("nodewright COMMAND"), the names of the
//     flags defined on that set in its function and in any function of the
//     package the set is passed to (the shared target flags).
//
// Test files are never read.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// fileNames maps each parsed file to its path from the root, for messages.
var fileNames = map[*ast.File]string{}

// pkgFiles parses the non-test Go files of one directory (relative to root).
func pkgFiles(t *testing.T, dir string) []*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	matches, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.File
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, m, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		fileNames[f] = filepath.Join(dir, filepath.Base(m))
		out = append(out, f)
	}
	if len(out) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}

// productDirs returns every directory with Go files under the given trees.
func productDirs(t *testing.T, trees ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, tree := range trees {
		err := filepath.WalkDir(filepath.Join(root, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				rel, err := filepath.Rel(root, filepath.Dir(path))
				if err != nil {
					return err
				}
				seen[rel] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return sortedSet(seen)
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func unquote(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// stringConsts returns a package's string constants by name, with the name
// of their declared type ("" when untyped).
type constant struct{ value, typ string }

func stringConsts(files []*ast.File, keep func(doc string) bool) map[string]constant {
	out := map[string]constant{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST || (keep != nil && !keep(g.Doc.Text())) {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := unquote(vs.Values[i]); ok {
							out[n.Name] = constant{v, typ}
						}
					}
				}
			}
		}
	}
	return out
}

// metricNames: the constants of shared/metrics' "Metric names" block.
func metricNames(t *testing.T) []string {
	consts := stringConsts(pkgFiles(t, "shared/metrics"), func(doc string) bool { return strings.HasPrefix(doc, "Metric names") })
	set := map[string]bool{}
	for _, c := range consts {
		set[c.value] = true
	}
	return sortedSet(set)
}

// eventReasons walks shared/, functions/ and cmd/.
func eventReasons(t *testing.T) []string {
	set := map[string]bool{}
	for _, dir := range productDirs(t, "shared", "functions", "cmd") {
		reasonsIn(t, pkgFiles(t, dir), set)
	}
	return sortedSet(set)
}

// reasonsIn adds the event reasons of one package's files to set.
func reasonsIn(t *testing.T, files []*ast.File, set map[string]bool) {
	t.Helper()
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			params := map[string]bool{}
			paramType := map[string]string{} // a parameter's named type, if any
			for _, fl := range fn.Type.Params.List {
				for _, n := range fl.Names {
					params[n.Name] = true
					if id, ok := fl.Type.(*ast.Ident); ok {
						paramType[n.Name] = id.Name
					}
				}
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !isEventCall(call) {
					return true
				}
				pos := fileNames[f] + ": " + fn.Name.Name
				reason := call.Args[3]
				if id, ok := reason.(*ast.Ident); ok && params[id.Name] {
					return true // a wrapper forwarding its caller's reason
				}
				if v, ok := constValue(t, files, f, reason); ok {
					set[v] = true
					return true
				}
				if conv, ok := reason.(*ast.CallExpr); ok {
					typ := conversionFieldType(files, conv)
					if id, ok := conv.Fun.(*ast.Ident); ok && id.Name == "string" && len(conv.Args) == 1 {
						if arg, ok := conv.Args[0].(*ast.Ident); ok && paramType[arg.Name] != "" && paramType[arg.Name] != "string" {
							typ = paramType[arg.Name] // string(p) of a parameter of a typed reason: every constant of the type
						}
					}
					if typ != "" {
						found := false
						for _, c := range stringConsts(files, nil) {
							if c.typ == typ {
								set[c.value], found = true, true
							}
						}
						if !found {
							t.Errorf("%s: no constants of type %s for an event reason", pos, typ)
						}
						return true
					}
				}
				t.Errorf("%s: an event reason the extraction cannot read (a literal, a constant, a forwarded parameter, string(p) of a typed parameter or string(x.Field) of a typed field)", pos)
				return true
			})
		}
	}
}

// module is the repository's Go module path.
const module = "github.com/nodewright/nodewright/"

// constValue reads e as a string constant: a literal, a constant of the
// package (files), a constant of another package of the module (pkg.Name,
// through f's imports), or a conversion of one (T(c), string(c)).
func constValue(t *testing.T, files []*ast.File, f *ast.File, e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		return unquote(x)
	case *ast.Ident:
		c, ok := stringConsts(files, nil)[x.Name]
		return c.value, ok
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		if !ok {
			return "", false
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name := filepath.Base(path)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if name != pkg.Name || !strings.HasPrefix(path, module) {
				continue
			}
			c, ok := stringConsts(pkgFiles(t, strings.TrimPrefix(path, module)), nil)[x.Sel.Name]
			return c.value, ok
		}
	case *ast.CallExpr:
		if len(x.Args) == 1 {
			return constValue(t, files, f, x.Args[0])
		}
	}
	return "", false
}

func isEventCall(call *ast.CallExpr) bool {
	if len(call.Args) < 5 {
		return false
	}
	if sel, ok := call.Args[2].(*ast.SelectorExpr); ok && (sel.Sel.Name == "EventTypeNormal" || sel.Sel.Name == "EventTypeWarning") {
		return true
	}
	if v, ok := unquote(call.Args[2]); ok && (v == "Normal" || v == "Warning") {
		return true
	}
	var name string
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		name = fn.Sel.Name
	case *ast.Ident:
		name = fn.Name
	}
	switch name {
	case "Event", "Eventf", "NodeEvent", "event":
		return true
	}
	return false
}

// conversionFieldType reads string(x.F) and returns the named type of the
// package's struct field F ("" when it is not that, or F is ambiguous).
func conversionFieldType(files []*ast.File, call *ast.CallExpr) string {
	if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "string" || len(call.Args) != 1 {
		return ""
	}
	sel, ok := call.Args[0].(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	types := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fl := range st.Fields.List {
				for _, name := range fl.Names {
					if id, ok := fl.Type.(*ast.Ident); ok && name.Name == sel.Sel.Name {
						types[id.Name] = true
					}
				}
			}
			return true
		})
	}
	if len(types) != 1 {
		return ""
	}
	return sortedSet(types)[0]
}

// envVars walks cmd, functions, infra and shared.
func envVars(t *testing.T) []string {
	set := map[string]bool{}
	names := stringConsts(pkgFiles(t, "shared/names"), nil)
	for _, dir := range productDirs(t, "cmd", "functions", "infra", "shared") {
		files := pkgFiles(t, dir)
		consts := stringConsts(files, nil)
		for name, c := range consts {
			if strings.HasPrefix(name, "Env") || strings.HasPrefix(name, "env") {
				set[c.value] = true
			}
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				var name string
				switch fn := call.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				if name != "Getenv" && name != "getenv" && name != "LookupEnv" {
					return true
				}
				switch a := call.Args[0].(type) {
				case *ast.BasicLit:
					v, _ := unquote(a)
					set[v] = true
				case *ast.Ident:
					if c, ok := consts[a.Name]; ok {
						set[c.value] = true
					}
				case *ast.SelectorExpr:
					if x, ok := a.X.(*ast.Ident); ok && x.Name == "names" {
						if c, ok := names[a.Sel.Name]; ok {
							set[c.value] = true
						} else {
							t.Errorf("%s: names.%s is not a constant of shared/names", dir, a.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
	return sortedSet(set)
}

// contextKeys reads infra's package main.
func contextKeys(t *testing.T) []string {
	set := map[string]bool{}
	for _, f := range pkgFiles(t, "infra") {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CallExpr:
					sel, ok := x.Fun.(*ast.SelectorExpr)
					if !ok || len(x.Args) == 0 {
						return true
					}
					switch sel.Sel.Name {
					case "str", "list", "boolean", "number":
						if v, ok := unquote(x.Args[0]); ok {
							set[v] = true
						}
					}
				case *ast.CompositeLit:
					if _, ok := x.Type.(*ast.MapType); ok && fn.Name.Name == "props" {
						for _, e := range x.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								if v, ok := unquote(kv.Key); ok {
									set[v] = true
								}
							}
						}
					}
				}
				return true
			})
		}
	}
	return sortedSet(set)
}

// cliFlags maps each command of cmd/nodewright ("status", "webhook apply")
// to its flags' names.
func cliFlags(t *testing.T) map[string][]string {
	files := pkgFiles(t, "cmd/nodewright")
	funcs := map[string]*ast.FuncDecl{}
	for _, f := range files {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				funcs[fn.Name.Name] = fn
			}
		}
	}
	out := map[string][]string{}
	for _, fn := range funcs {
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				return true
			}
			call, ok := as.Rhs[0].(*ast.CallExpr)
			if !ok || !isSelector(call.Fun, "flag", "NewFlagSet") || len(call.Args) == 0 {
				return true
			}
			name, ok := unquote(call.Args[0])
			id, isID := as.Lhs[0].(*ast.Ident)
			if !ok || !isID || !strings.HasPrefix(name, "nodewright ") {
				t.Errorf("cmd/nodewright %s: a flag set the extraction cannot read", fn.Name.Name)
				return true
			}
			set := map[string]bool{}
			flagsOn(funcs, fn.Body, id.Name, set, map[string]bool{})
			out[strings.TrimPrefix(name, "nodewright ")] = sortedSet(set)
			return true
		})
	}
	return out
}

func isSelector(e ast.Expr, x, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == x && s.Sel.Name == sel
}

// flagsOn collects the flags defined on the flag set named fs in body, and
// follows the set into the package's functions it is passed to.
func flagsOn(funcs map[string]*ast.FuncDecl, body *ast.BlockStmt, fs string, set, visited map[string]bool) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == fs {
				arg := -1
				switch m := sel.Sel.Name; {
				case m == "Var" || m == "Func" || m == "BoolFunc" || m == "TextVar":
					arg = 0
					if m == "Var" || m == "TextVar" {
						arg = 1
					}
				case strings.HasSuffix(m, "Var"):
					arg = 1
				case m == "String" || m == "Bool" || m == "Int" || m == "Int64" || m == "Uint" || m == "Uint64" || m == "Float64" || m == "Duration":
					arg = 0
				}
				if arg >= 0 && arg < len(call.Args) {
					if v, ok := unquote(call.Args[arg]); ok {
						set[v] = true
					}
				}
				return true
			}
		}
		for i, a := range call.Args {
			id, ok := a.(*ast.Ident)
			if !ok || id.Name != fs {
				continue
			}
			var callee string
			switch f := call.Fun.(type) {
			case *ast.SelectorExpr:
				callee = f.Sel.Name
			case *ast.Ident:
				callee = f.Name
			}
			fn, ok := funcs[callee]
			if !ok || visited[callee] {
				continue
			}
			visited[callee] = true
			if p := paramName(fn, i); p != "" {
				flagsOn(funcs, fn.Body, p, set, visited)
			}
		}
		return true
	})
}

func paramName(fn *ast.FuncDecl, i int) string {
	k := 0
	for _, fl := range fn.Type.Params.List {
		for _, n := range fl.Names {
			if k == i {
				return n.Name
			}
			k++
		}
	}
	return ""
}
