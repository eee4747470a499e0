// Package sdkcalls finds the AWS operations a Go program can call, by reading
// the source of the packages it links, and names the IAM actions they need.
//
// It exists so that a function's IAM policy can be checked against its code
// with nothing to keep in step by hand: the stack's tests scan each function
// (`go list -deps ./functions/<fn>`) and fail when a reachable operation is not
// granted, and the end-to-end tests check that the operations they see the
// functions call are among those the scan found.
//
// The scan is syntactic and conservative. In every package of the module the
// program links (non-test files only) it finds:
//
//   - the methods of narrow client interfaces, which the packages declare as
//     the code that uses a client should: a method
//     Op(context.Context, *svc.OpInput, ...func(*svc.Options)) where svc is an
//     SDK service package (github.com/aws/aws-sdk-go-v2/service/<svc>);
//   - the operation inputs the code builds (`&svc.OpInput{...}`), which also
//     catches calls on a concrete client and paginators.
//
// Linking a package counts as being able to call what it declares: keep a
// function from linking what it must not be allowed to do.
package sdkcalls

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ServicePathPrefix is the import path prefix of the SDK's service packages.
const ServicePathPrefix = "github.com/aws/aws-sdk-go-v2/service/"

// Operation is one AWS API operation: the SDK service package's name (the
// last element of its import path, "ec2", "dynamodb") and the operation.
type Operation struct {
	Service string
	Name    string
}

func (o Operation) String() string { return o.Service + ":" + o.Name }

// Found is an operation and where the source reaches it.
type Found struct {
	Operation
	// Where lists "file:line" positions (relative to the module root), sorted.
	Where []string
}

// Options select the build the scan sees.
type Options struct {
	// Env is added to the environment of `go list` (GOOS, GOARCH).
	Env []string
	// Tags are the build tags.
	Tags []string
}

// LambdaBuild is how the stack builds the functions (linux/arm64,
// lambda.norpc): the files the scan reads are those the binaries contain.
var LambdaBuild = Options{Env: []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}, Tags: []string{"lambda.norpc"}}

// listedPackage is the part of `go list -json` the scan reads.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

// Scan returns the operations the program pattern (e.g. "./functions/webhook")
// can call, sorted, scanning every package of the main module in its
// dependency graph. root is the module root.
func Scan(root, pattern string, o Options) ([]Found, error) {
	pkgs, err := list(root, pattern, o)
	if err != nil {
		return nil, err
	}
	found := map[Operation]map[string]bool{}
	fset := token.NewFileSet()
	for _, p := range pkgs {
		for _, name := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("scan %s: %w", path, err)
			}
			for _, hit := range scanFile(f) {
				rel, rerr := filepath.Rel(root, fset.Position(hit.pos).Filename)
				if rerr != nil {
					rel = fset.Position(hit.pos).Filename
				}
				if found[hit.op] == nil {
					found[hit.op] = map[string]bool{}
				}
				found[hit.op][rel+":"+strconv.Itoa(fset.Position(hit.pos).Line)] = true
			}
		}
	}
	out := make([]Found, 0, len(found))
	for op, where := range found {
		f := Found{Operation: op}
		for w := range where {
			f.Where = append(f.Where, w)
		}
		sort.Strings(f.Where)
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// list runs `go list -deps -json` and keeps the main module's packages.
func list(root, pattern string, o Options) ([]listedPackage, error) {
	args := []string{"list", "-deps", "-json"}
	if len(o.Tags) > 0 {
		args = append(args, "-tags", strings.Join(o.Tags, ","))
	}
	args = append(args, pattern)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), o.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	mod, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	var out []listedPackage
	dec := json.NewDecoder(&stdout)
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Module != nil && p.Module.Path == mod {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("go list %s: no package of module %s", pattern, mod)
	}
	return out, nil
}

// modulePath reads the module path from root/go.mod.
func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod has no module line", root)
}

type hit struct {
	op  Operation
	pos token.Pos
}

// scanFile finds the operations one file declares or builds inputs for.
func scanFile(f *ast.File) []hit {
	services := map[string]string{} // local import name -> service
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		svc, ok := strings.CutPrefix(path, ServicePathPrefix)
		if !ok || strings.Contains(svc, "/") {
			continue // not a service root package (types, internal, ...)
		}
		local := svc
		if imp.Name != nil {
			local = imp.Name.Name
		}
		if local == "_" || local == "." {
			continue
		}
		services[local] = svc
	}
	if len(services) == 0 {
		return nil
	}
	// svcType returns the service and type name of a selector svc.T.
	svcType := func(e ast.Expr) (string, string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", "", false
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return "", "", false
		}
		svc, ok := services[id.Name]
		return svc, sel.Sel.Name, ok
	}
	var hits []hit
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.InterfaceType:
			for _, m := range x.Methods.List {
				ft, ok := m.Type.(*ast.FuncType)
				if !ok || len(m.Names) == 0 {
					continue
				}
				if op, ok := clientMethod(m.Names[0].Name, ft, svcType); ok {
					hits = append(hits, hit{op, m.Pos()})
				}
			}
		case *ast.CompositeLit:
			if svc, typ, ok := svcType(x.Type); ok {
				if name, ok := strings.CutSuffix(typ, "Input"); ok && name != "" {
					hits = append(hits, hit{Operation{svc, name}, x.Pos()})
				}
			}
		}
		return true
	})
	return hits
}

// clientMethod reports whether method name with type ft has the shape of an
// SDK client operation: (context.Context, *svc.<name>Input, ...func(*svc.Options)).
func clientMethod(name string, ft *ast.FuncType, svcType func(ast.Expr) (string, string, bool)) (Operation, bool) {
	var params []ast.Expr
	for _, p := range ft.Params.List {
		n := len(p.Names)
		if n == 0 {
			n = 1
		}
		for i := 0; i < n; i++ {
			params = append(params, p.Type)
		}
	}
	if len(params) != 3 {
		return Operation{}, false
	}
	if sel, ok := params[0].(*ast.SelectorExpr); !ok || sel.Sel.Name != "Context" {
		return Operation{}, false
	}
	star, ok := params[1].(*ast.StarExpr)
	if !ok {
		return Operation{}, false
	}
	svc, typ, ok := svcType(star.X)
	if !ok || typ != name+"Input" {
		return Operation{}, false
	}
	ell, ok := params[2].(*ast.Ellipsis)
	if !ok {
		return Operation{}, false
	}
	fn, ok := ell.Elt.(*ast.FuncType)
	if !ok || len(fn.Params.List) != 1 {
		return Operation{}, false
	}
	opt, ok := fn.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return Operation{}, false
	}
	if osvc, otyp, ok := svcType(opt.X); !ok || osvc != svc || otyp != "Options" {
		return Operation{}, false
	}
	return Operation{Service: svc, Name: name}, true
}
