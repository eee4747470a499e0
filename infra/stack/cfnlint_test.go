package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// CfnLintVersion is the cfn-lint the tests run (make tools links it into
// the tools directory, installing it with pip where it is missing).
const CfnLintVersion = "1.51.0"

// cfnLintAccepted are the cfn-lint warnings the stack keeps, by rule, each
// with why. Errors are never accepted. A rule listed here that no variant
// triggers any more fails the test, so the list stays true.
var cfnLintAccepted = map[string]string{
	// W3005 "dependency already enforced by a GetAtt": each function's
	// DependsOn names its role, which its Role property's GetAtt already
	// orders. CDK's Function adds that construct-level dependency itself and
	// renders it after our code runs; overriding DependsOn by hand would also
	// have to keep the dependency on the role's policy (which a function in
	// a VPC needs before Lambda creates its network interfaces). The
	// duplicate is harmless: CloudFormation orders by either.
	"W3005": "redundant DependsOn on the function's own role, added by CDK's Function",
}

// cfnLintFinding is one entry of `cfn-lint --format json`.
type cfnLintFinding struct {
	Filename string
	Level    string
	Message  string
	Location struct{ Path []any }
	Rule     struct{ Id, ShortDescription string }
}

func (f cfnLintFinding) String() string {
	var path []string
	for _, p := range f.Location.Path {
		path = append(path, fmt.Sprint(p))
	}
	return fmt.Sprintf("%s %s %s at %s: %s", filepath.Base(f.Filename), f.Level, f.Rule.Id, strings.Join(path, "/"), f.Message)
}

// cfnLint finds cfn-lint CfnLintVersion: the tools directory's (NODEWRIGHT_TOOLS,
// else ~/.cache/nodewright/tools), else PATH's.
func cfnLint(t *testing.T) string {
	t.Helper()
	var candidates []string
	dir := os.Getenv("NODEWRIGHT_TOOLS")
	if dir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".cache", "nodewright", "tools")
		}
	}
	if dir != "" {
		candidates = append(candidates, filepath.Join(dir, "bin", "cfn-lint"))
	}
	if p, err := exec.LookPath("cfn-lint"); err == nil {
		candidates = append(candidates, p)
	}
	var seen []string
	for _, c := range candidates {
		out, err := exec.Command(c, "--version").Output()
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(out))
		if v == "cfn-lint "+CfnLintVersion {
			return c
		}
		seen = append(seen, c+" is "+v)
	}
	t.Fatalf("cfn-lint %s is missing (found: %v): run `make tools`, which links it or installs it with "+
		"`python3 -m pip install cfn-lint==%s`, or put cfn-lint %s on PATH", CfnLintVersion, seen, CfnLintVersion, CfnLintVersion)
	return ""
}

// TestCfnLint lints every stack variant's template with cfn-lint: no
// errors, and no warnings beyond cfnLintAccepted.
func TestCfnLint(t *testing.T) {
	lint := cfnLint(t)
	dir := t.TempDir()
	var names, files []string
	for name := range variantEdits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := namedVariant(t, name)
		b, err := json.MarshalIndent(s.json, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name+".template.json")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	cmd := exec.Command(lint, append([]string{"--format", "json"}, files...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run() // cfn-lint exits non-zero when it finds anything
	var findings []cfnLintFinding
	if err := json.Unmarshal(stdout.Bytes(), &findings); err != nil {
		t.Fatalf("cfn-lint output is not JSON (%v, exit %v): %s\n%s", err, runErr, stdout.String(), stderr.String())
	}
	var bad []string
	triggered := map[string]bool{}
	for _, f := range findings {
		triggered[f.Rule.Id] = true
		if _, ok := cfnLintAccepted[f.Rule.Id]; ok && f.Level != "Error" {
			continue
		}
		bad = append(bad, f.String())
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("cfn-lint %s findings over %d variants:\n  %s", CfnLintVersion, len(files), strings.Join(bad, "\n  "))
	}
	for rule := range cfnLintAccepted {
		if !triggered[rule] {
			t.Errorf("accepted cfn-lint rule %s no longer fires: remove it from cfnLintAccepted", rule)
		}
	}
	t.Logf("cfn-lint %s over %v: %d findings, all accepted", CfnLintVersion, names, len(findings))
}
