package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/refdata"
)

const validPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
`

const validClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
`

// dirWith writes files into a new directory.
func dirWith(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name           string
		files          map[string]string
		code           int
		stdout, stderr []string
	}{
		{name: "valid", files: map[string]string{"pool.yaml": validPool, "class.yaml": validClass, "notes.txt": "not read",
			"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}, code: exitOK,
			stdout: []string{"NodePool default: valid (nodeClassRef default)", "EC2NodeClass default: valid", "1 NodePools and 1 EC2NodeClasses are valid",
				"app.yaml: document 1 (v1 ConfigMap x) is not a NodePool or EC2NodeClass: ignored"}},
		{name: "bad field", files: map[string]string{"class.yaml": validClass,
			"pool.yaml": strings.Replace(validPool, "operator: In", "operator: Within", 1)}, code: exitError,
			stderr: []string{"is not valid:", "pool.yaml: document 1 (NodePool default): spec.template.spec.requirements[0].operator"}},
		{name: "unknown field", files: map[string]string{"class.yaml": validClass,
			"pool.yaml": validPool + "  weight: 10\n  colour: blue\n"}, code: exitError,
			stderr: []string{"pool.yaml: document 1 (NodePool default): spec.colour: unknown field"}},
		{name: "missing class", files: map[string]string{"pool.yaml": validPool}, code: exitError,
			stderr: []string{`pool.yaml: document 1 (NodePool default): spec.template.spec.nodeClassRef.name: EC2NodeClass "default" not found`}},
		{name: "bad YAML", files: map[string]string{"pool.yaml": validPool, "class.yaml": validClass + "  tags: [\n"}, code: exitError,
			stderr: []string{"class.yaml: document 1", "line "}},
		{name: "no NodePool", files: map[string]string{"class.yaml": validClass}, code: exitError, stderr: []string{"has no NodePool (apiVersion karpenter.sh/v1, kind NodePool)"}},
		// Issue 20: fields Nodewright would ignore are refused, each with its
		// path and what to do instead.
		{name: "refused class fields", files: map[string]string{"pool.yaml": validPool,
			"class.yaml": validClass + "  instanceProfile: my-profile\n"}, code: exitError,
			stderr: []string{
				`class.yaml: document 1 (EC2NodeClass default): spec.instanceProfile: Nodewright launches nodes with its stack's instance profile`}},
		{name: "AL2 class", files: map[string]string{"pool.yaml": validPool, "class.yaml": strings.Replace(validClass, "al2023@latest", "al2@latest", 1)},
			code: exitOK, stdout: []string{"EC2NodeClass default: valid"}},
		{name: "networking fields", files: map[string]string{"pool.yaml": validPool, "class.yaml": validClass + "  ipPrefixCount: 4\n"},
			code: exitOK, stdout: []string{"EC2NodeClass default: valid"}},
		{name: "Windows class under a pool that does not require Windows", files: map[string]string{"pool.yaml": validPool,
			"class.yaml": strings.Replace(validClass, "al2023@latest", "windows2022@latest", 1)}, code: exitError,
			stderr: []string{`pool.yaml: document 1 (NodePool default): spec.template.spec.requirements: EC2NodeClass "default" launches Windows2022 nodes: the NodePool must require kubernetes.io/os In [windows] (add {key: kubernetes.io/os, operator: In, values: [windows]})`}},
		{name: "Windows pool", files: map[string]string{"pool.yaml": validPool + "        - {key: kubernetes.io/os, operator: In, values: [windows]}\n",
			"class.yaml": strings.Replace(validClass, "al2023@latest", "windows2022@latest", 1)},
			code: exitOK, stdout: []string{"NodePool default: valid", "EC2NodeClass default: valid"}},
		{name: "bottlerocket class with instance store", files: map[string]string{"pool.yaml": validPool,
			"class.yaml": strings.Replace(validClass, "al2023@latest", "bottlerocket@latest", 1) + "  instanceStorePolicy: RAID0\n"},
			code: exitOK, stdout: []string{"EC2NodeClass default: valid"}},
		{name: "static pool", files: map[string]string{"class.yaml": validClass, "pool.yaml": validPool + "  replicas: 3\n  limits: {nodes: 4}\n"},
			code: exitOK, stdout: []string{"NodePool default: valid"}},
		{name: "static pool with a weight", files: map[string]string{"class.yaml": validClass, "pool.yaml": validPool + "  replicas: 3\n  weight: 10\n"}, code: exitError,
			stderr: []string{"pool.yaml: document 1 (NodePool default): spec.weight: not supported on a static NodePool (replicas is set)"}},
		{name: "reserved capacity", files: map[string]string{"class.yaml": validClass + "  capacityReservationSelectorTerms: [{id: cr-0123456789abcdef0}]\n",
			"pool.yaml": strings.Replace(validPool, "values: [spot]", "values: [reserved, on-demand]", 1)}, code: exitOK,
			stdout: []string{"NodePool default: valid", "EC2NodeClass default: valid"}},
		{name: "NodeOverlay", files: map[string]string{"class.yaml": validClass, "pool.yaml": validPool,
			"overlay.yaml": "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: savings}\nspec: {priceAdjustment: '-10%'}\n"}, code: exitOK,
			stdout: []string{"NodePool default: valid"}},
		{name: "NodeOverlay capacity", files: map[string]string{"class.yaml": validClass, "pool.yaml": validPool,
			"overlay.yaml": "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: pages}\nspec: {capacity: {cpu: '1'}}\n"}, code: exitError,
			stderr: []string{"overlay.yaml: document 1 (NodeOverlay pages): spec.capacity[cpu]: a NodeOverlay adds extended resources only, not cpu"}},
		{name: "Gte and Lte", files: map[string]string{"class.yaml": validClass,
			"pool.yaml": validPool + "        - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['4']}\n        - {key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ['16']}\n"},
			code: exitOK, stdout: []string{"NodePool default: valid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := dirWith(t, tc.files)
			code, stdout, stderr := runCLI(t, nil, "", "validate", dir)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestValidateArguments(t *testing.T) {
	file := filepath.Join(dirWith(t, map[string]string{"pool.yaml": validPool}), "pool.yaml")
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"validate"}, "want one directory"},
		{[]string{"validate", "a", "b"}, "got 2 arguments"},
		{[]string{"validate", file}, "is not a directory"},
		{[]string{"validate", filepath.Join(t.TempDir(), "none")}, "is not a directory"},
	} {
		code, _, stderr := runCLI(t, nil, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.stderr)
		}
	}
}

// The shared examples are what users start from: together (but for
// getting-started.yaml, an alternative with the same names; and with the
// EC2NodeClass the GPU training example names but does not ship) they must
// validate; without that class the reference is reported with its field
// path, and with getting-started.yaml the duplicate names.
func TestValidateTheExamples(t *testing.T) {
	dir, err := refdata.Examples()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) < 7 {
		t.Fatalf("examples in %s: %v %v", dir, paths, err)
	}
	files := map[string]string{}
	var startedWith string
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(p) == "getting-started.yaml" {
			startedWith = string(body)
			continue
		}
		files[filepath.Base(p)] = string(body)
	}
	code, stdout, stderr := runCLI(t, nil, "", "validate", dirWith(t, files))
	if code != exitError || !strings.Contains(stderr, `nodepool-gpu-training.yaml: document 1 (NodePool gpu-training): spec.template.spec.nodeClassRef.name: EC2NodeClass "gpu-class" not found`) {
		t.Errorf("without gpu-class: exit %d\n%s%s", code, stdout, stderr)
	}
	files["gpu-class.yaml"] = strings.Replace(validClass, "name: default", "name: gpu-class", 1)
	code, stdout, stderr = runCLI(t, nil, "", "validate", dirWith(t, files))
	if code != exitOK || !strings.Contains(stdout, "NodePool gpu-training: valid (nodeClassRef gpu-class)") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
	files["getting-started.yaml"] = startedWith
	code, _, stderr = runCLI(t, nil, "", "validate", dirWith(t, files))
	if code != exitError || !strings.Contains(stderr, `metadata.name: duplicate NodePool name "default"`) {
		t.Errorf("with getting-started.yaml: exit %d\n%s", code, stderr)
	}
}
