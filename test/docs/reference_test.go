package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/metrics"
)

// compare reports the names the code has and the page does not, and the
// names the page has and the code does not.
func compare(t *testing.T, what, where string, code, doc []string) {
	t.Helper()
	if len(code) == 0 {
		t.Fatalf("%s: nothing extracted from the code: is the extraction still right?", what)
	}
	inDoc := map[string]bool{}
	for _, d := range doc {
		inDoc[d] = true
	}
	inCode := map[string]bool{}
	for _, c := range code {
		inCode[c] = true
		if !inDoc[c] {
			t.Errorf("%s %q is in the code but not named in %s", what, c, where)
		}
	}
	for _, d := range sortedSet(inDoc) {
		if !inCode[d] {
			t.Errorf("%s %q is named in %s but not in the code", what, d, where)
		}
	}
}

// keysUnder returns the table keys of a reference page's section.
func keysUnder(t *testing.T, rel, heading string) []string {
	t.Helper()
	p := readPage(t, rel)
	start, end, ok := p.section(heading)
	if !ok {
		t.Fatalf("%s has no heading %q", rel, heading)
	}
	return p.tableKeys(start, end)
}

func TestReferenceMetrics(t *testing.T) {
	code := metricNames(t)
	// The extraction agrees with the package's own list of definitions.
	var defs []string
	for _, d := range metrics.Definitions() {
		defs = append(defs, d.Name)
	}
	sort.Strings(defs)
	if !slices.Equal(code, defs) {
		t.Errorf("extracted metric constants %v differ from metrics.Definitions %v", code, defs)
	}
	compare(t, "metric", "docs/reference/metrics.md", code, keysUnder(t, "docs/reference/metrics.md", "Metrics"))
}

func TestReferenceEvents(t *testing.T) {
	compare(t, "event reason", "docs/reference/events.md", eventReasons(t), keysUnder(t, "docs/reference/events.md", "Reasons"))
}

func TestReferenceEnvironment(t *testing.T) {
	compare(t, "environment variable", "docs/reference/environment.md", envVars(t), keysUnder(t, "docs/reference/environment.md", "Variables"))
}

func TestReferenceContext(t *testing.T) {
	var doc []string
	for _, k := range keysUnder(t, "docs/reference/configuration.md", "CDK context values") {
		key, ok := strings.CutPrefix(k, "nodewright:")
		if !ok {
			t.Errorf("docs/reference/configuration.md: context key %q lacks the nodewright: prefix", k)
		}
		doc = append(doc, key)
	}
	compare(t, "CDK context key", "docs/reference/configuration.md", contextKeys(t), doc)
}

// Each command's section of the CLI reference lists exactly its flags.
func TestReferenceCLI(t *testing.T) {
	code := cliFlags(t)
	for _, cmd := range []string{"status", "explain", "validate", "plan", "webhook apply"} {
		if _, ok := code[cmd]; !ok {
			t.Errorf("no flag set found for nodewright %s", cmd)
		}
	}
	p := readPage(t, "docs/reference/cli.md")
	for cmd, flags := range code {
		heading := "`nodewright " + cmd + "`"
		start, end, ok := p.section(heading)
		if !ok {
			t.Errorf("docs/reference/cli.md has no heading %s", heading)
			continue
		}
		var doc []string
		for _, k := range p.tableKeys(start, end) {
			if !strings.HasPrefix(k, "-") {
				t.Errorf("docs/reference/cli.md, %s: flag %q is not written -name", heading, k)
			}
			doc = append(doc, strings.TrimPrefix(k, "-"))
		}
		if len(flags) == 0 {
			if len(doc) > 0 {
				t.Errorf("docs/reference/cli.md, %s names flags %v; the command has none", heading, doc)
			}
			continue
		}
		compare(t, "flag of nodewright "+cmd, "docs/reference/cli.md", flags, doc)
	}
}

// The extraction finds what it must on fixed source: a guard against an
// extraction that silently finds nothing.
func TestExtractionFindsKnownNames(t *testing.T) {
	for what, c := range map[string]struct {
		got  []string
		want []string
	}{
		"metrics":     {metricNames(t), []string{"PendingPods", "NodePoolNotReady"}},
		"events":      {eventReasons(t), []string{"Nominated", "FailedScheduling", "NodeClassNotFound", "DisruptionPlanned"}},
		"environment": {envVars(t), []string{"NODEWRIGHT_CLUSTER_NAME", "AWS_LAMBDA_FUNCTION_NAME", "AWS_ENDPOINT_URL"}},
		"context":     {contextKeys(t), []string{"cluster", "config", "stackName", "skipAccessEntries", "launchFailureThreshold"}},
	} {
		for _, w := range c.want {
			if !slices.Contains(c.got, w) {
				t.Errorf("%s: extraction lacks %q (got %v)", what, w, c.got)
			}
		}
	}
	if f := cliFlags(t)["status"]; !slices.Contains(f, "stack") || !slices.Contains(f, "o") {
		t.Errorf("status flags %v lack the shared target flags", f)
	}
}

// The event-reason extraction reads every form a reason takes in the code.
func TestEventReasonForms(t *testing.T) {
	src := `package p

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/names"
)

type Kind string

const (
	KindA Kind = "FromTypedField"
	local      = "FromConstant"
)

type status struct{ Reason Kind }

type Why string

const WhyB Why = "FromTypedParameter"

func g(r recorder, why Why) {
	r.Event(ctx, ref, "Normal", string(why), "m")
}

func f(r recorder, s status, reason string) {
	r.Event(ctx, ref, corev1.EventTypeNormal, "FromLiteral", "m")
	r.Event(ctx, ref, corev1.EventTypeWarning, local, "m")
	r.Event(ctx, ref, "Warning", string(s.Reason), "m")
	r.NodeEvent(ctx, n, typ, names.EnvClusterName, "m")
	r.event(ctx, n, typ, reason, "m")
	r.Other(ctx, ref, typ, "NotAnEvent", "m")
}
`
	file, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	reasonsIn(t, []*ast.File{file}, set)
	want := []string{"FromConstant", "FromLiteral", "FromTypedField", "FromTypedParameter", "NODEWRIGHT_CLUSTER_NAME"}
	if got := sortedSet(set); !slices.Equal(got, want) {
		t.Errorf("reasons %v, want %v", got, want)
	}
}
