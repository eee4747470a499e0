package stack

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/infra/sdkcalls"
)

// roleStatements returns every Allow statement that applies to the role
// with logical ID roleID: its inline policies, the AWS::IAM::Policy and
// AWS::IAM::ManagedPolicy resources attached to it. AWS-managed policy ARNs
// on the role are returned separately (their content is not in the
// template).
func roleStatements(t *testing.T, s *synthesized, roleID string) (allows []map[string]any, managedArns []string) {
	t.Helper()
	ref := js(map[string]any{"Ref": roleID})
	addDoc := func(doc any) {
		for _, st := range doc.(map[string]any)["Statement"].([]any) {
			if m := st.(map[string]any); m["Effect"] == "Allow" {
				allows = append(allows, m)
			}
		}
	}
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
		for _, r := range s.resources(typ) {
			p := r["Properties"].(map[string]any)
			for _, role := range p["Roles"].([]any) {
				if js(role) == ref {
					addDoc(p["PolicyDocument"])
				}
			}
		}
	}
	role := s.json["Resources"].(map[string]any)[roleID].(map[string]any)["Properties"].(map[string]any)
	if pols, ok := role["Policies"].([]any); ok {
		for _, p := range pols {
			addDoc(p.(map[string]any)["PolicyDocument"])
		}
	}
	if arns, ok := role["ManagedPolicyArns"].([]any); ok {
		for _, a := range arns {
			managedArns = append(managedArns, js(a))
		}
	}
	return allows, managedArns
}

// functionRoleID is the logical ID of fn's execution role.
func functionRoleID(t *testing.T, s *synthesized, fn string) string {
	t.Helper()
	p := s.one(t, "AWS::Lambda::Function", title(fn))
	att, ok := p["Role"].(map[string]any)["Fn::GetAtt"].([]any)
	if !ok || len(att) != 2 || att[1] != "Arn" {
		t.Fatalf("%s: role %s is not a role of this stack", fn, js(p["Role"]))
	}
	return att[0].(string)
}

// missingGrants lists the actions in needed (operation -> where in the
// source) that no statement in allows grants.
func missingGrants(allows []map[string]any, found []sdkcalls.Found) []string {
	var missing []string
	for _, f := range found {
		for _, action := range f.Actions() {
			granted := false
			for _, st := range allows {
				for _, pattern := range strs(st["Action"]) {
					if sdkcalls.Allows(pattern, action) {
						granted = true
					}
				}
			}
			if !granted {
				missing = append(missing, fmt.Sprintf("%s (for %s, reached at %s)", action, f.Operation, strings.Join(f.Where, ", ")))
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// unreached lists the granted actions (without wildcards) that no found
// operation needs: not an error (a grant may serve the platform, such as
// Lambda's log writes or the event source's SQS polling), but worth a look.
func unreached(allows []map[string]any, found []sdkcalls.Found) []string {
	needed := map[string]bool{}
	for _, f := range found {
		for _, a := range f.Actions() {
			needed[strings.ToLower(a)] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, st := range allows {
		for _, a := range strs(st["Action"]) {
			if !strings.ContainsAny(a, "*?") && !needed[strings.ToLower(a)] && !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Every AWS operation a function's code can reach is granted to its role.
// The operations are found in the source of the packages the function links
// (package sdkcalls): a new narrow client interface anywhere in shared/ is
// picked up with nothing to register, and a function that links a package
// must be allowed what the package can call.
func TestFunctionPoliciesGrantEveryCall(t *testing.T) {
	s := defaultStack(t)
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range FunctionNames() {
		t.Run(fn, func(t *testing.T) {
			found, err := sdkcalls.Scan(root, "./functions/"+fn, sdkcalls.LambdaBuild)
			if err != nil {
				t.Fatal(err)
			}
			allows, managed := roleStatements(t, s, functionRoleID(t, s, fn))
			if len(managed) > 0 {
				t.Errorf("role has AWS-managed policies %v: their grants cannot be checked here", managed)
			}
			if missing := missingGrants(allows, found); len(missing) > 0 {
				t.Fatalf("the %s function's role does not grant:\n  %s", fn, strings.Join(missing, "\n  "))
			}
			t.Logf("%s: %d operations, all granted; granted but not reached: %v", fn, len(found), unreached(allows, found))
		})
	}
}

// The check itself: a role without the SSM statement misses exactly the
// operation the fleet's AMI resolution calls.
func TestMissingGrantsNamesTheCall(t *testing.T) {
	found := []sdkcalls.Found{
		{Operation: sdkcalls.Operation{Service: "ssm", Name: "GetParameters"}, Where: []string{"shared/fleet/api.go:27"}},
		{Operation: sdkcalls.Operation{Service: "ec2", Name: "DescribeImages"}, Where: []string{"shared/fleet/api.go:14"}},
		{Operation: sdkcalls.Operation{Service: "dynamodb", Name: "TransactWriteItems"}, Where: []string{"shared/state/store.go:25"}},
	}
	allows := []map[string]any{
		{"Effect": "Allow", "Action": "ssm:GetParameter"},
		{"Effect": "Allow", "Action": []any{"ec2:Describe*", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}},
	}
	got := missingGrants(allows, found)
	want := []string{
		"dynamodb:ConditionCheckItem (for dynamodb:TransactWriteItems, reached at shared/state/store.go:25)",
		"ssm:GetParameters (for ssm:GetParameters, reached at shared/fleet/api.go:27)",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("missing %q, want %q", got, want)
	}
}
