package metrics

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// karpenterModules are the modules whose metrics Karpenter() pins.
var karpenterModules = []string{"sigs.k8s.io/karpenter", "github.com/aws/karpenter-provider-aws"}

// registered is a metric as Karpenter's source registers it.
type registered struct {
	kind    KarpenterKind
	labels  []string
	runtime bool // labels built at run time
	where   string
}

// The pinned list is what Karpenter v1.14.1 registers: the names, kinds and
// (where the source lists them) labels are read again from the pinned
// modules' sources, as go.mod resolves them.
func TestKarpenterListMatchesSource(t *testing.T) {
	roots := map[string]string{}
	for _, mod := range karpenterModules {
		out, err := exec.Command("go", "list", "-m", "-json", mod).Output()
		if err != nil {
			t.Fatalf("go list -m %s: %v", mod, err)
		}
		var m struct{ Path, Version, Dir string }
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		if m.Version != KarpenterVersion || m.Dir == "" {
			t.Fatalf("%s is %s at %q; the list is pinned to %s: update Karpenter() with go.mod", mod, m.Version, m.Dir, KarpenterVersion)
		}
		roots[m.Path] = m.Dir
	}
	src := map[string]registered{}
	for _, mod := range karpenterModules {
		found, err := registeredMetrics(roots, mod)
		if err != nil {
			t.Fatal(err)
		}
		for name, r := range found {
			if prev, dup := src[name]; dup {
				t.Errorf("%s is registered twice: %s and %s", name, prev.where, r.where)
			}
			src[name] = r
		}
	}
	if len(src) < 50 {
		t.Fatalf("found only %d registered metrics: is the extraction still right? %v", len(src), src)
	}
	t.Logf("%d metrics registered by Karpenter %s", len(src), KarpenterVersion)
	for _, problem := range compareKarpenter(Karpenter(), src) {
		t.Error(problem)
	}
}

// compareKarpenter lists where the pinned list and the source disagree.
func compareKarpenter(pinned []KarpenterMetric, src map[string]registered) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range pinned {
		seen[k.Name] = true
		r, ok := src[k.Name]
		if !ok {
			out = append(out, fmt.Sprintf("%s is pinned but Karpenter %s does not register it", k.Name, KarpenterVersion))
			continue
		}
		if r.kind != k.Kind {
			out = append(out, fmt.Sprintf("%s is a %s in Karpenter's source (%s), pinned as a %s", k.Name, r.kind, r.where, k.Kind))
		}
		if r.runtime != k.RuntimeLabels {
			out = append(out, fmt.Sprintf("%s: labels built at run time in the source (%s): %v, pinned: %v", k.Name, r.where, r.runtime, k.RuntimeLabels))
		}
		switch {
		case r.runtime:
			for _, l := range k.Labels {
				if !slices.Contains(r.labels, l) {
					out = append(out, fmt.Sprintf("%s: pinned label %s is not among those the source adds (%v, %s)", k.Name, l, r.labels, r.where))
				}
			}
		case !slices.Equal(r.labels, k.Labels):
			out = append(out, fmt.Sprintf("%s has labels %v in Karpenter's source (%s), pinned %v", k.Name, r.labels, r.where, k.Labels))
		}
		for _, d := range k.Dropped {
			if !slices.Contains(k.Labels, d) {
				out = append(out, fmt.Sprintf("%s drops %s, which is not one of its labels", k.Name, d))
			}
		}
		if k.Nodewright == "" {
			out = append(out, fmt.Sprintf("%s does not say what Nodewright emits for it", k.Name))
		}
		if k.Emitted() && (k.Statistic == "" || len(k.Dropped) > 0 && k.Kind != Gauge) {
			out = append(out, fmt.Sprintf("%s is emitted without a statistic, or drops labels of a metric that is not a gauge", k.Name))
		}
	}
	for name, r := range src {
		if !seen[name] {
			out = append(out, fmt.Sprintf("Karpenter %s registers %s (%s), which Karpenter() does not list", KarpenterVersion, name, r.where))
		}
	}
	slices.Sort(out)
	return out
}

// registeredMetrics reads the non-test Go files of module mod (roots maps
// module paths to their directories) for Prometheus metric registrations:
// calls of operatorpkg's NewPrometheus{Counter,Gauge,Histogram,Summary} or
// client_golang's New{Counter,Gauge,Histogram,Summary}[Vec] with a
// prometheus.*Opts literal. The name is Namespace_Subsystem_Name, each a
// string literal or constant (of the package, or of a package of the
// modules); the labels are the []string literal after the options, or a
// call of a function of the package returning one; any other expression is
// labels built at run time, of which the constants appended are listed.
func registeredMetrics(roots map[string]string, mod string) (map[string]registered, error) {
	res := &resolver{roots: roots, pkgs: map[string]*pkgInfo{}}
	out := map[string]registered{}
	dir := filepath.Join(roots[mod], "pkg")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		pkg, err := res.loadDir(path)
		if err != nil {
			return err
		}
		for _, f := range pkg.files {
			var ferr error
			ast.Inspect(f.ast, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || ferr != nil {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !registration(sel.Sel.Name) {
					return true
				}
				for i, a := range call.Args {
					lit, ok := a.(*ast.CompositeLit)
					if !ok {
						continue
					}
					kind, ok := optsKind(lit.Type)
					if !ok {
						continue
					}
					where := fmt.Sprintf("%s:%d", strings.TrimPrefix(res.fset.Position(call.Pos()).Filename, roots[mod]+"/"), res.fset.Position(call.Pos()).Line)
					name, err := res.fqName(pkg, f, lit)
					if err != nil {
						ferr = fmt.Errorf("%s: %w", where, err)
						return false
					}
					r := registered{kind: kind, where: where}
					if i+1 < len(call.Args) {
						r.labels, r.runtime, err = res.labels(pkg, f, call.Args[i+1])
						if err != nil {
							ferr = fmt.Errorf("%s: %w", where, err)
							return false
						}
					}
					out[name] = r
				}
				return true
			})
			if ferr != nil {
				return ferr
			}
		}
		return nil
	})
	return out, err
}

func registration(fn string) bool {
	for _, k := range []string{"Counter", "Gauge", "Histogram", "Summary"} {
		if fn == "NewPrometheus"+k || fn == "New"+k || fn == "New"+k+"Vec" {
			return true
		}
	}
	return false
}

// optsKind is the kind of a prometheus.CounterOpts (GaugeOpts...) type.
func optsKind(e ast.Expr) (KarpenterKind, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" {
		return "", false
	}
	kind, ok := strings.CutSuffix(sel.Sel.Name, "Opts")
	if !ok {
		return "", false
	}
	return KarpenterKind(strings.ToLower(kind)), true
}

type fileInfo struct {
	ast     *ast.File
	imports map[string]string // local name to import path
}

type pkgInfo struct {
	files  []fileInfo
	consts map[string]string
	funcs  map[string]*ast.FuncDecl
}

// resolver parses the packages of the modules, each once.
type resolver struct {
	fset  *token.FileSet
	roots map[string]string
	pkgs  map[string]*pkgInfo // by directory
}

// loadDir parses the non-test Go files of dir.
func (r *resolver) loadDir(dir string) (*pkgInfo, error) {
	if p, ok := r.pkgs[dir]; ok {
		return p, nil
	}
	if r.fset == nil {
		r.fset = token.NewFileSet()
	}
	p := &pkgInfo{consts: map[string]string{}, funcs: map[string]*ast.FuncDecl{}}
	r.pkgs[dir] = p
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(r.fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		fi := fileInfo{ast: f, imports: map[string]string{}}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			name := filepath.Base(ip)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			fi.imports[name] = ip
		}
		p.files = append(p.files, fi)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					p.funcs[d.Name.Name] = d
				}
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								p.consts[n.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			}
		}
	}
	return p, nil
}

// str resolves a string literal or a constant.
func (r *resolver) str(p *pkgInfo, f fileInfo, e ast.Expr) (string, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			return strconv.Unquote(e.Value)
		}
	case *ast.Ident:
		if v, ok := p.consts[e.Name]; ok {
			return v, nil
		}
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			break
		}
		ip, ok := f.imports[x.Name]
		if !ok {
			break
		}
		for mod, root := range r.roots {
			rel, ok := strings.CutPrefix(ip, mod+"/")
			if !ok {
				continue
			}
			other, err := r.loadDir(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				return "", err
			}
			if v, ok := other.consts[e.Sel.Name]; ok {
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("cannot resolve %s to a string", types(e))
}

func types(e ast.Expr) string { return fmt.Sprintf("%T", e) }

// fqName joins the options' Namespace, Subsystem and Name as Prometheus
// does (BuildFQName: the non-empty ones, with underscores).
func (r *resolver) fqName(p *pkgInfo, f fileInfo, lit *ast.CompositeLit) (string, error) {
	parts := map[string]string{}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok || (key.Name != "Namespace" && key.Name != "Subsystem" && key.Name != "Name") {
			continue
		}
		v, err := r.str(p, f, kv.Value)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key.Name, err)
		}
		parts[key.Name] = v
	}
	if parts["Name"] == "" {
		return "", fmt.Errorf("no Name")
	}
	var name []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			name = append(name, parts[k])
		}
	}
	return strings.Join(name, "_"), nil
}

// labels resolves a label list: a []string literal, or a call of a
// function of the package that returns one; otherwise the labels are built
// at run time and the constants found in the expression are returned.
func (r *resolver) labels(p *pkgInfo, f fileInfo, e ast.Expr) ([]string, bool, error) {
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 0 {
		if id, ok := call.Fun.(*ast.Ident); ok {
			if fd := p.funcs[id.Name]; fd != nil && len(fd.Body.List) == 1 {
				if ret, ok := fd.Body.List[0].(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
					if l, rt, err := r.labels(p, f, ret.Results[0]); err == nil && !rt {
						return l, false, nil
					}
				}
			}
		}
	}
	if lit, ok := e.(*ast.CompositeLit); ok {
		if at, ok := lit.Type.(*ast.ArrayType); ok {
			if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "string" {
				out := []string{}
				for _, el := range lit.Elts {
					v, err := r.str(p, f, el)
					if err != nil {
						return nil, false, err
					}
					out = append(out, v)
				}
				if len(out) == 0 {
					out = nil
				}
				return out, false, nil
			}
		}
	}
	// Built at run time: collect what can be resolved, following the
	// package's own functions.
	var found []string
	seen := map[*ast.FuncDecl]bool{}
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok {
					if fd := p.funcs[id.Name]; fd != nil && !seen[fd] {
						seen[fd] = true
						walk(fd.Body)
					}
				}
			case *ast.Ident, *ast.SelectorExpr:
				if v, err := r.str(p, f, n.(ast.Expr)); err == nil && !slices.Contains(found, v) {
					found = append(found, v)
				}
				return false
			}
			return true
		})
	}
	walk(e)
	return found, true, nil
}

// The comparison fails a name pinned but not registered, one registered but
// not pinned, a kind or labels that differ, and a dropped label that is
// not one of the metric's.
func TestCompareKarpenterFindsMismatches(t *testing.T) {
	pinned := []KarpenterMetric{
		{Name: "karpenter_a_total", Kind: Counter, Labels: []string{"x"}, Nodewright: "n"},
		{Name: "karpenter_b", Kind: Gauge, Labels: []string{"y"}, Dropped: []string{"z"}, Nodewright: "n"},
		{Name: "karpenter_gone", Kind: Gauge, Nodewright: "n"},
		{Name: "karpenter_nodes", Kind: Gauge, Labels: []string{"node_name"}, RuntimeLabels: true, Nodewright: "n"},
	}
	src := map[string]registered{
		"karpenter_a_total": {kind: Gauge, labels: []string{"x", "w"}, where: "a.go:1"},
		"karpenter_b":       {kind: Gauge, labels: []string{"y"}, where: "b.go:2"},
		"karpenter_new":     {kind: Counter, where: "n.go:3"},
		"karpenter_nodes":   {kind: Gauge, labels: []string{"node_name", "phase"}, runtime: true, where: "c.go:4"},
	}
	got := strings.Join(compareKarpenter(pinned, src), "\n")
	for _, want := range []string{
		"karpenter_a_total is a gauge in Karpenter's source (a.go:1), pinned as a counter",
		"karpenter_a_total has labels [x w] in Karpenter's source (a.go:1), pinned [x]",
		"karpenter_b drops z, which is not one of its labels",
		"karpenter_gone is pinned but Karpenter v1.14.1 does not register it",
		"Karpenter v1.14.1 registers karpenter_new (n.go:3), which Karpenter() does not list",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "karpenter_nodes") {
		t.Errorf("labels built at run time that include the pinned ones were refused:\n%s", got)
	}
}
