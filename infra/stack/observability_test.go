package stack

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/metrics"
)

// metricsImport is the package whose constants name the metrics.
const metricsImport = "github.com/nodewright/nodewright/shared/metrics"

// The dashboard and the alarms may only graph what some code path emits,
// and everything emitted must be on the dashboard: the emitted metrics come
// from a scan of the functions' Go sources (every Emit call, whose metric
// must be a shared/metrics constant), the graphed ones from the
// synthesized template.
func TestDashboardAndAlarmsMatchWhatIsEmitted(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	consts, err := metricConstants(filepath.Join(root, "shared", "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	emitted, problems, err := emittedMetrics(root, consts, "shared", "functions")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(emitted) < 10 {
		t.Fatalf("the scan found only %d emitted metrics: %v", len(emitted), emitted)
	}
	s := defaultStack(t)
	dash, err := dashboardMetrics(js(s.one(t, "AWS::CloudWatch::Dashboard", "Dashboard")["DashboardBody"]))
	if err != nil {
		t.Fatal(err)
	}
	alarms := map[string]bool{}
	for _, a := range s.resources("AWS::CloudWatch::Alarm") {
		p := a["Properties"].(map[string]any)
		if p["Namespace"] == metrics.Namespace {
			alarms[p["MetricName"].(string)] = true
		}
	}
	if len(alarms) == 0 || len(dash) == 0 {
		t.Fatalf("no Nodewright metric found on the dashboard (%v) or in the alarms (%v): the template's shape changed", dash, alarms)
	}
	for _, m := range compareMetrics(emitted, dash, alarms) {
		t.Error(m)
	}
}

// compareMetrics lists what does not match: graphed or alarmed but never
// emitted, emitted but not graphed, emitted but not defined. Karpenter's
// names are graphed by the Grafana dashboard (TestGrafanaDashboardMatchesWhatIsEmitted).
func compareMetrics(emitted map[string][]string, dashboard, alarms map[string]bool) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(dashboard)) {
		if emitted[name] == nil {
			out = append(out, fmt.Sprintf("the dashboard graphs %s, which no code path emits: emit it or take it off the dashboard", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(alarms)) {
		if emitted[name] == nil {
			out = append(out, fmt.Sprintf("an alarm watches %s, which no code path emits: the alarm can never fire", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(emitted)) {
		if !dashboard[name] && !karpenterName(name) {
			out = append(out, fmt.Sprintf("%s is emitted (%s) but not on the dashboard: graph it in infra/stack/observability.go", name, strings.Join(emitted[name], ", ")))
		}
		if _, ok := metrics.Lookup(name); !ok {
			out = append(out, fmt.Sprintf("%s is emitted (%s) but has no metrics.Definition: Emit refuses it", name, strings.Join(emitted[name], ", ")))
		}
	}
	for _, d := range append(metrics.Definitions(), metrics.KarpenterDefinitions()...) {
		if emitted[d.Name] == nil {
			out = append(out, fmt.Sprintf("metric %s is defined but no code path emits it: emit it or remove the definition", d.Name))
		}
	}
	return out
}

// metricConstants maps each string constant of the metrics package's
// sources in dir to its value.
func metricConstants(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, err := strconv.Unquote(lit.Value); err == nil {
							out[name.Name] = v
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no string constants in %s", dir)
	}
	return out, nil
}

// emittedMetrics scans the non-test Go files under root/dirs (the metrics
// package itself aside) for Emit calls and returns each metric emitted with
// where ("file:line", relative to root). An Emit whose metric is not a
// constant of the metrics package is a problem: the scan could not see what
// it emits.
func emittedMetrics(root string, consts map[string]string, dirs ...string) (map[string][]string, []string, error) {
	emitted := map[string][]string{}
	var problems []string
	fset := token.NewFileSet()
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if rel, _ := filepath.Rel(root, path); filepath.ToSlash(rel) == "shared/metrics" || e.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			alias := ""
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == metricsImport {
					alias = "metrics"
					if imp.Name != nil {
						alias = imp.Name.Name
					}
				}
			}
			// A package's own emit helper (func (h *Handler) emit(name
			// string, ...) forwarding to Metrics.Emit(name, ...)) is a
			// wrapper: its forwarding call is not checked, its callers are.
			var wrapperParam string
			ast.Inspect(f, func(n ast.Node) bool {
				if fd, ok := n.(*ast.FuncDecl); ok {
					wrapperParam = ""
					if fd.Name.Name == "emit" && fd.Type.Params != nil && len(fd.Type.Params.List) > 0 && len(fd.Type.Params.List[0].Names) > 0 {
						wrapperParam = fd.Type.Params.List[0].Names[0].Name
					}
					return true
				}
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var name string
				switch fn := call.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				if (name != "Emit" && name != "emit") || len(call.Args) == 0 {
					return true
				}
				if id, ok := call.Args[0].(*ast.Ident); ok && wrapperParam != "" && id.Name == wrapperParam {
					return true
				}
				pos := fset.Position(call.Pos())
				rel, _ := filepath.Rel(root, pos.Filename)
				where := fmt.Sprintf("%s:%d", filepath.ToSlash(rel), pos.Line)
				if arg, ok := call.Args[0].(*ast.SelectorExpr); ok && alias != "" {
					if pkg, ok := arg.X.(*ast.Ident); ok && pkg.Name == alias {
						if v, ok := consts[arg.Sel.Name]; ok {
							emitted[v] = append(emitted[v], where)
							return true
						}
					}
				}
				problems = append(problems, fmt.Sprintf("%s: Emit's metric is not a constant of shared/metrics: name it by its constant so that the dashboard check sees it", where))
				return true
			})
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return emitted, problems, nil
}

// searchMetric is a metric name in a dashboard SEARCH expression.
var searchMetric = regexp.MustCompile(`MetricName=\\?"([^"\\]+)\\?"`)

// dashboardMetrics returns the Nodewright metrics a dashboard body graphs:
// metric rows of the namespace and SEARCH expressions over it. body is the
// template's DashboardBody, a string or an Fn::Join of strings and
// references (references become a placeholder).
func dashboardMetrics(body string) (map[string]bool, error) {
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return nil, err
	}
	text, err := joined(v)
	if err != nil {
		return nil, err
	}
	var dash struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(text), &dash); err != nil {
		return nil, fmt.Errorf("dashboard body: %w\n%s", err, text)
	}
	out := map[string]bool{}
	for _, w := range dash.Widgets {
		namespace := ""
		for _, row := range w.Properties.Metrics {
			if len(row) == 0 {
				continue
			}
			if opts, ok := row[0].(map[string]any); ok {
				expr, _ := opts["expression"].(string)
				if strings.Contains(expr, "{"+metrics.Namespace+",") {
					for _, m := range searchMetric.FindAllStringSubmatch(expr, -1) {
						out[m[1]] = true
					}
				}
				continue
			}
			ns, _ := row[0].(string)
			if ns != "." {
				namespace = ns
			}
			if namespace == metrics.Namespace && len(row) > 1 {
				if name, ok := row[1].(string); ok && name != "." {
					out[name] = true
				}
			}
		}
	}
	return out, nil
}

// joined evaluates a CloudFormation string: a literal, or Fn::Join with an
// empty separator of literals and references (each becomes "REF").
func joined(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any:
		j, ok := x["Fn::Join"].([]any)
		if !ok {
			return "REF", nil
		}
		if len(j) != 2 {
			return "", fmt.Errorf("Fn::Join %v", j)
		}
		sep, _ := j[0].(string)
		parts, _ := j[1].([]any)
		var b strings.Builder
		for i, p := range parts {
			if i > 0 {
				b.WriteString(sep)
			}
			s, err := joined(p)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unexpected %T in a CloudFormation string", v)
}

// The scan sees metrics however the metrics package is imported, flags an
// Emit it cannot resolve, and the comparison fails for a metric emitted but
// not graphed (someone adds an Emit without the dashboard) and for one
// graphed but never emitted.
func TestMetricScanAndComparison(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("shared/metrics/metrics.go", "package metrics\nconst (\n\tA = \"Alpha\"\n\tB = \"Beta\"\n\tNew = \"Brand\"\n)\n")
	write("shared/x/x.go", `package x

import m "`+metricsImport+`"

type E interface{ Emit(string, float64, map[string]string) error }

func f(e E, name string) {
	_ = e.Emit(m.A, 1, nil)
	_ = e.Emit(m.New, 1, nil)
	_ = e.Emit(name, 1, nil)
}
`)
	write("functions/y/y.go", "package y\n\nimport \""+metricsImport+"\"\n\nfunc g(e interface{ Emit(string, float64, any) error }) { _ = e.Emit(metrics.B, 2, nil) }\n")
	write("shared/z/z.go", `package z

import "`+metricsImport+`"

type H struct{ M interface{ Emit(string, float64, any) error } }

func (h *H) emit(name string, v float64) { _ = h.M.Emit(name, v, nil) }

func (h *H) run(other string) {
	h.emit(metrics.A, 1)
	h.emit(other, 1)
}
`)
	write("functions/y/y_test.go", "package y\n\nimport \""+metricsImport+"\"\n\nfunc h(e interface{ Emit(string, float64, any) error }) { _ = e.Emit(metrics.New, 2, nil) }\n")
	consts, err := metricConstants(filepath.Join(root, "shared", "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	emitted, problems, err := emittedMetrics(root, consts, "shared", "functions")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"Alpha": {"shared/x/x.go:8", "shared/z/z.go:10"}, "Brand": {"shared/x/x.go:9"}, "Beta": {"functions/y/y.go:5"}}
	if js(emitted) != js(want) {
		t.Errorf("emitted %v, want %v", emitted, want)
	}
	// A package's emit wrapper forwards its parameter: its callers are
	// checked, the forwarding is not.
	if len(problems) != 2 || !strings.HasPrefix(problems[0], "shared/x/x.go:10: Emit's metric is not a constant") ||
		!strings.HasPrefix(problems[1], "shared/z/z.go:11: Emit's metric is not a constant") {
		t.Errorf("problems %q", problems)
	}
	mismatches := strings.Join(compareMetrics(emitted, map[string]bool{"Alpha": true, "Beta": true, "Gone": true}, map[string]bool{"Alpha": true, "Lost": true}), "\n")
	for _, w := range []string{
		"the dashboard graphs Gone, which no code path emits",
		"an alarm watches Lost, which no code path emits",
		"Brand is emitted (shared/x/x.go:9) but not on the dashboard",
		"Brand is emitted (shared/x/x.go:9) but has no metrics.Definition",
	} {
		if !strings.Contains(mismatches, w) {
			t.Errorf("mismatches lack %q:\n%s", w, mismatches)
		}
	}
}

func TestDashboardMetricsParsesRowsAndSearches(t *testing.T) {
	body := `{"Fn::Join":["",["{\"widgets\":[{\"properties\":{\"metrics\":[[\"Nodewright\",\"PendingPods\",\"ClusterName\",\"c\"],[\".\",\"Nodes\"],[\"AWS/Lambda\",\"Errors\",\"FunctionName\",\"",{"Ref":"Fn"},"\"],[{\"expression\":\"SEARCH('{Nodewright,ClusterName,Reason} MetricName=\\\"LaunchFailures\\\" ClusterName=\\\"c\\\"', 'Sum', 60)\"}],[{\"expression\":\"SEARCH('{AWS/EC2,InstanceId} MetricName=\\\"CPUUtilization\\\"', 'Average', 60)\"}]]}}]}"]]}`
	got, err := dashboardMetrics(body)
	if err != nil {
		t.Fatal(err)
	}
	if js(got) != `{"LaunchFailures":true,"Nodes":true,"PendingPods":true}` {
		t.Errorf("metrics %v", got)
	}
}
