package stack

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/infra/sdkcalls"
	"github.com/nodewright/nodewright/shared/fleet"
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

// Every AWS operation a function's code can reach is granted to its role,
// in every stack variant. The operations are found in the source of the
// packages the function links (package sdkcalls): a new narrow client
// interface anywhere in shared/ is picked up with nothing to register, and
// a function that links a package must be allowed what the package can
// call. Where the resources a call reaches are known at synth (the SSM
// parameters the configuration's EC2NodeClasses name, the cluster), the
// grant must cover them too (wantResources).
func TestFunctionPoliciesGrantEveryCall(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]sdkcalls.Found{}
	for _, fn := range FunctionNames() {
		if found[fn], err = sdkcalls.Scan(root, "./functions/"+fn, sdkcalls.LambdaBuild); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(variantEdits)) {
		s := namedVariant(t, name)
		for _, fn := range FunctionNames() {
			t.Run(name+"/"+fn, func(t *testing.T) {
				allows, managed := roleStatements(t, s, functionRoleID(t, s, fn))
				if len(managed) > 0 {
					t.Errorf("role has AWS-managed policies %v: their grants cannot be checked here", managed)
				}
				if missing := missingGrants(allows, found[fn]); len(missing) > 0 {
					t.Fatalf("the %s function's role does not grant:\n  %s", fn, strings.Join(missing, "\n  "))
				}
				want := wantResources(s.stack.props)
				checked := 0
				for _, f := range found[fn] {
					for _, action := range f.Actions() {
						for _, arn := range want[action] {
							checked++
							if !grantsOn(allows, action, arn) {
								t.Errorf("%s is not granted on %s (needed for %s at %s)", action, arn, f.Operation, strings.Join(f.Where, ", "))
							}
						}
					}
				}
				t.Logf("%s: %d operations, all granted, %d resources checked; granted but not reached: %v", fn, len(found[fn]), checked, unreached(allows, found[fn]))
			})
		}
	}
}

// Test account and region the template's pseudo parameters stand for.
const (
	testAccount = "123456789012"
	testRegion  = "us-east-1"
)

// wantResources are the resources (ARNs in testAccount and testRegion) each
// action must be granted on, as far as the stack's props tell: every SSM
// parameter an EC2NodeClass's AMI terms resolve through (an alias's public
// parameters, for a sample Kubernetes version; ssmParameter names; the
// extra names), and the cluster DescribeCluster reads.
func wantResources(p Props) map[string][]string {
	var params []string
	for _, nc := range p.Config.NodeClasses {
		if _, version, ok := nc.Alias(); ok {
			for _, ap := range fleet.AL2023Parameters("1.35", version) {
				params = append(params, ap.Name)
			}
		}
	}
	params = append(params, SSMParameterNames(p.Config, p.SSMParameters)...)
	var arns []string
	for _, name := range params {
		switch {
		case strings.HasPrefix(name, "arn:"):
			arns = append(arns, name)
		case strings.HasPrefix(name, PublicParametersPath):
			arns = append(arns, "arn:aws:ssm:"+testRegion+"::parameter"+name)
		default:
			arns = append(arns, "arn:aws:ssm:"+testRegion+":"+testAccount+":parameter/"+strings.TrimPrefix(name, "/"))
		}
	}
	return map[string][]string{
		"ssm:GetParameters":   arns,
		"eks:DescribeCluster": {"arn:aws:eks:" + testRegion + ":" + testAccount + ":cluster/" + p.ClusterName},
	}
}

// grantsOn says whether a statement of allows grants action on arn.
func grantsOn(allows []map[string]any, action, arn string) bool {
	for _, st := range allows {
		acts := false
		for _, pattern := range strs(st["Action"]) {
			acts = acts || sdkcalls.Allows(pattern, action)
		}
		if !acts {
			continue
		}
		for _, r := range resourceList(st["Resource"]) {
			if sdkcalls.MatchesResource(r, arn) {
				return true
			}
		}
	}
	return false
}

// resourceList renders a statement's Resource (one or a list, strings or
// Fn::Join of pseudo parameters) with the test account and region; a value
// it cannot render (a reference to a resource) becomes "" and matches no
// ARN.
func resourceList(v any) []string {
	var items []any
	if l, ok := v.([]any); ok {
		items = l
	} else {
		items = []any{v}
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, render(it))
	}
	return out
}

func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			switch ref {
			case "AWS::Partition":
				return "aws"
			case "AWS::Region":
				return testRegion
			case "AWS::AccountId":
				return testAccount
			case "AWS::URLSuffix":
				return "amazonaws.com"
			}
			return ""
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			var out []string
			for _, p := range parts {
				r := render(p)
				if r == "" {
					return ""
				}
				out = append(out, r)
			}
			return strings.Join(out, sep)
		}
	}
	return ""
}

// The resource check itself: a grant on the public parameters alone does
// not cover a custom parameter of the account; a grant on its ARN does.
func TestGrantsOnNamesTheResource(t *testing.T) {
	public := map[string]any{"Effect": "Allow", "Action": "ssm:GetParameters", "Resource": map[string]any{"Fn::Join": []any{"", []any{
		"arn:", map[string]any{"Ref": "AWS::Partition"}, ":ssm:", map[string]any{"Ref": "AWS::Region"}, "::parameter/aws/service/*"}}}}
	custom := map[string]any{"Effect": "Allow", "Action": []any{"ssm:GetParameters"}, "Resource": []any{map[string]any{"Fn::Join": []any{"", []any{
		"arn:aws:ssm:us-east-1:", map[string]any{"Ref": "AWS::AccountId"}, ":parameter/team/ami"}}}}}
	alias := "arn:aws:ssm:us-east-1::parameter/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/standard/recommended/image_id"
	team := "arn:aws:ssm:us-east-1:123456789012:parameter/team/ami"
	if !grantsOn([]map[string]any{public}, "ssm:GetParameters", alias) || grantsOn([]map[string]any{public}, "ssm:GetParameters", team) {
		t.Error("the public grant: want the alias's parameter and not the team's")
	}
	if !grantsOn([]map[string]any{public, custom}, "ssm:GetParameters", team) || grantsOn([]map[string]any{custom}, "ssm:GetParameter", team) {
		t.Error("the custom grant: want ssm:GetParameters on the team's parameter, and no other action")
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
