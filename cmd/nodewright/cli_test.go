package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// runCLI runs the command line with a stand-in solver (nil: the real one).
func runCLI(t *testing.T, solve func(scheduling.Input) (*scheduling.Result, error), stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if solve == nil {
		code = run(args, strings.NewReader(stdin), &out, &errOut)
	} else {
		code = cli{solve: solve}.run(args, strings.NewReader(stdin), &out, &errOut)
	}
	return code, out.String(), errOut.String()
}

func TestHelpVersionAndUnknownCommands(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
		notStdout      string
	}{
		{args: []string{"help"}, code: 0, stdout: "nodewright plan [-f FILE]..."},
		{args: []string{"--help"}, code: 0, stdout: "nodewright version"},
		{args: []string{"help", "plan"}, stdout: "-max-instance-types", code: 0},
		{args: []string{"plan", "-h"}, stderr: "-spot-model SEED", code: 0},
		{args: []string{"version"}, code: 0, stdout: "nodewright "},
		{args: nil, code: 2, stderr: "Usage:"},
		{args: []string{"apply"}, code: 2, stderr: `unknown command "apply"`},
		{args: []string{"plan", "--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus"},
		{args: []string{"plan", "extra.yaml"}, code: 2, stderr: `unexpected argument "extra.yaml"`},
		{args: []string{"plan", "--spot-model", "cheap"}, code: 2, stderr: `--spot-model "cheap": want a seed`},
		{args: []string{"plan", "--max-instance-types", "0"}, code: 2, stderr: "--max-instance-types 0: must be at least 1"},
		{args: []string{"plan", "--min-values-policy", "Lenient"}, code: 2, stderr: `--min-values-policy "Lenient": want Strict or BestEffort`},
		{args: []string{"plan", "--preference-policy", "Prefer"}, code: 2, stderr: `--preference-policy "Prefer": want Respect or Ignore`},
		{args: []string{"plan", "--region", "us-west-2", "--zones", "us-east-1a"}, code: 2, stderr: "us-east-1a is not a zone of --region us-west-2"},
		{args: []string{"plan", "--zones", "us-east-1a,,us-east-1b"}, code: 2, stderr: "empty zone name"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout, tc.stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
		})
	}
}

const pendingPod = `apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]}
`

// recorder is a stand-in solver that keeps its input and answers a fixed plan.
type recorder struct {
	in  scheduling.Input
	res *scheduling.Result
}

func (r *recorder) solve(in scheduling.Input) (*scheduling.Result, error) {
	r.in = in
	if r.res != nil {
		return r.res, nil
	}
	return &scheduling.Result{}, nil
}

func TestFlagsMakeTheInput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		zones    []string
		spot     bool
		maxTypes int
		policy   scheduling.MinValuesPolicy
		prefs    scheduling.PreferencePolicy
	}{
		{"defaults", []string{"plan"}, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, true, 60, scheduling.MinValuesStrict, scheduling.PreferencesRespect},
		{"region", []string{"plan", "--region", "us-east-1", "--spot-model", "3"}, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, true, 60, scheduling.MinValuesStrict, scheduling.PreferencesRespect},
		{"zones", []string{"plan", "--zones", "us-east-1d, us-east-1a,us-east-1d"}, []string{"us-east-1d", "us-east-1a"}, true, 60, scheduling.MinValuesStrict, scheduling.PreferencesRespect},
		{"spot off", []string{"plan", "--spot-model", "off", "--max-instance-types", "10"}, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, false, 10, scheduling.MinValuesStrict, scheduling.PreferencesRespect},
		{"best effort", []string{"plan", "--min-values-policy", "BestEffort"}, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, true, 60, scheduling.MinValuesBestEffort, scheduling.PreferencesRespect},
		{"ignore preferences", []string{"plan", "--preference-policy", "Ignore"}, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, true, 60, scheduling.MinValuesStrict, scheduling.PreferencesIgnore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			code, _, stderr := runCLI(t, rec.solve, pendingPod, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			in := rec.in
			if !reflect.DeepEqual(in.Zones, tc.zones) || (in.Spot != nil) != tc.spot || in.MaxInstanceTypes != tc.maxTypes || in.MinValuesPolicy != tc.policy || in.PreferencePolicy != tc.prefs {
				t.Errorf("zones %v spot %v max %d minValuesPolicy %q preferencePolicy %q", in.Zones, in.Spot != nil, in.MaxInstanceTypes, in.MinValuesPolicy, in.PreferencePolicy)
			}
			if len(in.InstanceTypes) != 1363 {
				t.Errorf("catalog of %d types", len(in.InstanceTypes))
			}
			if len(in.Pods) != 1 || in.Pods[0].Name != "web-1" {
				t.Errorf("pods %v", in.Pods)
			}
			if !strings.Contains(stderr, "warning: 1 pending pods and no NodePool") {
				t.Errorf("stderr %q lacks the no-NodePool warning", stderr)
			}
		})
	}
}

func TestSpotModelSeedChangesPrices(t *testing.T) {
	prices := map[float64]bool{}
	for _, seed := range []string{"0", "1", "2"} {
		rec := &recorder{}
		if code, _, stderr := runCLI(t, rec.solve, pendingPod, "plan", "--spot-model", seed); code != 0 {
			t.Fatal(stderr)
		}
		p, ok := rec.in.Spot.SpotPrice("m5.large", "us-east-1a")
		if !ok || p <= 0 {
			t.Fatalf("seed %s: no spot price", seed)
		}
		prices[p] = true
	}
	if len(prices) < 2 {
		t.Errorf("seeds gave the same prices: %v", prices)
	}
}

func TestOutputJSON(t *testing.T) {
	res := &scheduling.Result{
		NodeClaims: []scheduling.NodeClaim{{NodePool: "default", InstanceTypes: []string{"m7g.medium"}, CapacityType: "spot",
			Zones: []string{"us-east-1a"}, PricePerHour: 0.0204, Pods: []string{"default/web-1"}}},
		PricePerHour: 0.0204, LowerBoundPricePerHour: 0.019,
	}
	rec := &recorder{res: res}
	code, stdout, stderr := runCLI(t, rec.solve, pendingPod, "plan", "-f", "-")
	if code != 0 {
		t.Fatal(stderr)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	for k, want := range map[string]string{"existingNodes": "[]", "unschedulable": "[]", "pricePerHour": "0.0204", "lowerBoundPricePerHour": "0.019"} {
		if string(m[k]) != want {
			t.Errorf("%s = %s, want %s", k, m[k], want)
		}
	}
	if !strings.Contains(string(m["nodeClaims"]), `"instanceTypes":["m7g.medium"]`) || strings.Count(stdout, "\n") != 1 {
		t.Errorf("compact output expected, got %s", stdout)
	}
	_, pretty, _ := runCLI(t, rec.solve, pendingPod, "plan", "--pretty")
	if !strings.Contains(pretty, "\n  \"nodeClaims\": [") {
		t.Errorf("--pretty output not indented: %s", pretty)
	}
}

func TestBadSnapshots(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	quantity := write("pods.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: default}\nspec: {containers: [{name: c, image: x, resources: {requests: {cpu: 2x}}}]}\n")
	unknown := write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{port: 80}]}\n")
	pool := write("pool.yaml", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {nodeClassRef: {group: example.com, kind: Other, name: x}, requirements: []}}}\n")
	weight := write("weight.yaml", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: heavy}\nspec: {weight: 500, template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}, requirements: []}}}\n")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  []string
	}{
		{"malformed quantity", []string{"plan", "-f", quantity}, "", []string{quantity + ": document 1 (Pod default/web-1): spec.containers[0].resources.requests.cpu: quantities must match"}},
		{"unknown kind", []string{"plan", "-f", unknown}, "", []string{svcName(unknown), `unknown kind "Service"`}},
		{"foreign node class", []string{"plan", "-f", pool}, "", []string{"(NodePool np): spec.template.spec.nodeClassRef"}},
		{"invalid nodepool", []string{"plan", "-f", weight}, "", []string{weight + ": document 1 (NodePool heavy): spec.weight: 500"}},
		{"missing file", []string{"plan", "-f", filepath.Join(dir, "missing.yaml")}, "", []string{"missing.yaml: no such file"}},
		{"stdin twice", []string{"plan", "-f", "-", "-f", "-"}, pendingPod, []string{"stdin can be read only once"}},
		{"bad stdin", []string{"plan"}, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {memory: 1Gb}}}]}\n",
			[]string{"stdin: document 1 (Pod default/p): spec.containers[0].resources.limits.memory: quantities must match"}},
		{"every problem", []string{"plan", "-f", quantity, "-f", unknown}, "", []string{"requests.cpu", `unknown kind "Service"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tc.stdin, tc.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q\ndoes not contain %q", stderr, w)
				}
			}
		})
	}
}

func svcName(path string) string { return path + ": document 1 (Service shop/web)" }
