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

// cfnLint is the pinned cfn-lint (see FindCfnLint); the test fails
// without it.
func cfnLint(t *testing.T) string {
	t.Helper()
	bin, err := FindCfnLint()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestCfnLint lints every stack variant's template with cfn-lint: no
// errors, and no warnings beyond CfnLintAccepted.
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
		if _, ok := CfnLintAccepted[f.Rule.Id]; ok && f.Level != "Error" {
			continue
		}
		bad = append(bad, f.String())
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("cfn-lint %s findings over %d variants:\n  %s", CfnLintVersion, len(files), strings.Join(bad, "\n  "))
	}
	for rule := range CfnLintAccepted {
		if !triggered[rule] {
			t.Errorf("accepted cfn-lint rule %s no longer fires: remove it from CfnLintAccepted", rule)
		}
	}
	t.Logf("cfn-lint %s over %v: %d findings, all accepted", CfnLintVersion, names, len(findings))
}
