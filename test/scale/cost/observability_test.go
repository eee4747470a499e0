package cost

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nodewright/nodewright/shared/metrics"
)

func TestSeries(t *testing.T) {
	defs := []metrics.Definition{
		{Name: "A"}, // 1
		{Name: "B", Detail: []string{metrics.DimReason}},                              // 1 + 4
		{Name: "C", Detail: []string{metrics.DimNodePool, metrics.DimCapacityType}},   // 1 + 2 x 3
		{Name: "D", Detail: []string{metrics.DimNodePool, metrics.DimInstanceType}},   // 1 + 2 x 10
		{Name: "E", Detail: []string{metrics.DimCapacityType, metrics.DimNodePool}},   // 1 + 3 x 2
		{Name: "F", Detail: []string{metrics.DimMethod, metrics.DimReason}},           // 1 + 2 x 4
		{Name: "G", Detail: []string{metrics.DimKind, metrics.DimReason, "nodepool"}}, // 1 + 5 x 4 x 1
	}
	values := map[string]int{metrics.DimReason: 4, metrics.DimNodePool: 2, metrics.DimCapacityType: 3,
		metrics.DimInstanceType: 10, metrics.DimMethod: 2, metrics.DimKind: 5, "nodepool": 1}
	got, err := Series(defs, values)
	if want := 1 + 5 + 7 + 21 + 7 + 9 + 21; err != nil || got != want {
		t.Errorf("Series = %d, %v; want %d", got, err, want)
	}
	delete(values, metrics.DimKind)
	if _, err := Series(defs, values); err == nil {
		t.Error("a dimension without a count: no error")
	}
}

// Every dimension key the product's metrics break down by has a count in
// DesignPointValues, so Series prices the real definitions.
func TestDesignPointValuesCoverTheMetrics(t *testing.T) {
	defs := append(metrics.Definitions(), metrics.KarpenterDefinitions()...)
	for _, k := range DetailKeys(defs) {
		if DesignPointValues[k] <= 0 {
			t.Errorf("DesignPointValues has no count for dimension %q", k)
		}
	}
	n, err := Series(defs, DesignPointValues)
	if err != nil || n <= len(defs) {
		t.Errorf("Series of the product's %d metrics = %d, %v", len(defs), n, err)
	}
}

// An EMF record is a JSON line of a few hundred bytes: its size grows with
// the dimension values' length, by one byte per value byte and dimension.
func TestEMFBytesPerPoint(t *testing.T) {
	defs := []metrics.Definition{mustLookup(t, metrics.PendingPods), mustLookup(t, metrics.Nodes)}
	short, err := EMFBytesPerPoint(defs, "c", 1)
	if err != nil {
		t.Fatal(err)
	}
	long, err := EMFBytesPerPoint(defs, "c", 11)
	if err != nil {
		t.Fatal(err)
	}
	// Nodes has two Detail values, PendingPods none: (2 x 10 bytes) / 2 records.
	if long-short != 10 || short < 150 || short > 600 {
		t.Errorf("EMF record %v bytes with 1-byte values, %v with 11-byte ones; want 150-600 and 10 more", short, long)
	}
}

func mustLookup(t *testing.T, name string) metrics.Definition {
	t.Helper()
	d, ok := metrics.Lookup(name)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return d
}

// Alarms and functionsOfTheStack match infra/stack: the alarms the stack's
// addAlarms creates outside and inside its loop over FunctionNames, and
// that list's length.
func TestAlarmsMatchTheStack(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "..", "infra", "stack")
	fset := token.NewFileSet()
	obs, err := parser.ParseFile(fset, filepath.Join(dir, "observability.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	props, err := parser.ParseFile(fset, filepath.Join(dir, "props.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	outside, inside, loops := 0, 0, 0
	for _, d := range obs.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "addAlarms" {
			continue
		}
		var walk func(n ast.Node, inLoop bool)
		walk = func(n ast.Node, inLoop bool) {
			ast.Inspect(n, func(m ast.Node) bool {
				switch x := m.(type) {
				case *ast.RangeStmt:
					if call, ok := x.X.(*ast.CallExpr); ok && isIdent(call.Fun, "FunctionNames") {
						loops++
						walk(x.Body, true)
						return false
					}
				case *ast.CallExpr:
					if isIdent(x.Fun, "alarm") {
						if inLoop {
							inside++
						} else {
							outside++
						}
					}
				}
				return true
			})
		}
		walk(fn.Body, false)
	}
	names := -1
	for _, d := range props.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "FunctionNames" {
			ast.Inspect(fn.Body, func(m ast.Node) bool {
				if lit, ok := m.(*ast.CompositeLit); ok {
					names = len(lit.Elts)
				}
				return true
			})
		}
	}
	if outside != alarmsOfTheStack || inside != alarmsPerFunction || loops != 1 || names != functionsOfTheStack {
		t.Errorf("infra/stack: %d alarms, %d per function in %d loops, %d functions; the cost model counts %d, %d per function, %d functions",
			outside, inside, loops, names, alarmsOfTheStack, alarmsPerFunction, functionsOfTheStack)
	}
	if Alarms() != 13 {
		t.Errorf("Alarms() = %d, want 3 + 2 x 5 = 13", Alarms())
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
