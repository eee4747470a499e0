package stack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CfnLintVersion is the cfn-lint the tests run (make tools links it into
// the tools directory, installing it with pip where it is missing).
const CfnLintVersion = "1.51.0"

// CfnLintAccepted are the cfn-lint warnings the stack keeps, by rule, each
// with why. Errors are never accepted. A rule listed here that no variant
// triggers any more fails the test, so the list stays true.
var CfnLintAccepted = map[string]string{
	// W3005 "dependency already enforced by a GetAtt": each function's
	// DependsOn names its role, which its Role property's GetAtt already
	// orders. CDK's Function adds that construct-level dependency itself and
	// renders it after our code runs; overriding DependsOn by hand would also
	// have to keep the dependency on the role's policy (which a function in
	// a VPC needs before Lambda creates its network interfaces). The
	// duplicate is harmless: CloudFormation orders by either.
	"W3005": "redundant DependsOn on the function's own role, added by CDK's Function",
}

// FindCfnLint finds cfn-lint CfnLintVersion: the tools directory's
// (NODEWRIGHT_TOOLS, else ~/.cache/nodewright/tools), else PATH's. Another
// version, or none, is an error saying how to install the pinned one: the
// tests that lint templates fail rather than skip.
func FindCfnLint() (string, error) {
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
			return c, nil
		}
		seen = append(seen, c+" is "+v)
	}
	return "", fmt.Errorf("cfn-lint %s is missing (found: %v): run `make tools`, which links it or installs it with "+
		"`python3 -m pip install cfn-lint==%s`, or put cfn-lint %s on PATH", CfnLintVersion, seen, CfnLintVersion, CfnLintVersion)
}
