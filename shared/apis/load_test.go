package apis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestKubectlGetOutputLoads(t *testing.T) {
	c, err := LoadFiles(filepath.Join("testdata", "kubectl-get.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	np, nc := onlyNodePool(t, c, "default"), onlyNodeClass(t, c, "default")
	eq(t, "status nodes", *np.Status.Nodes, int64(3))
	eq(t, "status cpu", np.Status.Resources.Cpu().Value(), int64(12))
	eq(t, "conditions", len(np.Status.Conditions), 2)
	eq(t, "condition time", np.Status.Conditions[1].LastTransitionTime.Time.Equal(time.Date(2025, 1, 14, 10, 2, 4, 0, time.UTC)), true)
	eq(t, "managed fields", np.ManagedFields[0].Manager, "kubectl-client-side-apply")
	eq(t, "amis", len(nc.Status.AMIs), 2)
	eq(t, "ami requirement", nc.Status.AMIs[0].Requirements[1].Operator, corev1.NodeSelectorOpDoesNotExist)
	eq(t, "zone id", nc.Status.Subnets[1].ZoneID, "use1-az6")
	eq(t, "reservation", nc.Status.CapacityReservations[0].ReservationType, CapacityReservationTypeCapacityBlock)
	eq(t, "instance profile", nc.Status.InstanceProfile, "demo_1234567890123456789")
	d, _ := c.Origin(nc)
	eq(t, "origin", []int{d.Index, d.Item}, []int{1, 2})
}

func TestTypedListsFillItemKinds(t *testing.T) {
	doc := `apiVersion: karpenter.sh/v1
kind: NodePoolList
metadata: {}
items:
- metadata: {name: a}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements: []
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: b}
  spec:
    weight: 0
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements: []
`
	c, err := Parse([]byte(doc), "list.yaml")
	want := "list.yaml: document 1 item 2 (NodePool b): spec.weight: 0 is out of range 1..100"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	eq(t, "item without kind read as NodePool", len(c.NodePools) == 1 && c.NodePools[0].Name == "a", true)
}

func TestNestedListIsAnError(t *testing.T) {
	doc := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n"
	_, err := Parse([]byte(doc), "nested.yaml")
	want := "nested.yaml: document 1 item 1 (List): kind: a List inside a List is not supported"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestJSONStream(t *testing.T) {
	var docs []string
	for _, y := range []string{nodePoolDoc(template()), nodeClassDoc("")} {
		c := mustParse(t, y)
		var obj any = c.NodePools
		if len(c.NodeClasses) > 0 {
			obj = c.NodeClasses[0]
		} else {
			obj = c.NodePools[0]
		}
		b, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	c, err := Parse([]byte(strings.Join(docs, "\n")), "stream.json")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "objects", len(c.NodePools)+len(c.NodeClasses), 2)

	_, err = Parse([]byte(docs[0]+"\n{\"apiVersion\": }"), "broken.json")
	line := strings.Count(docs[0], "\n") + 2 // the line after the first document
	want := fmt.Sprintf("broken.json: document 2: json: line %d: invalid character '}' looking for beginning of value", line)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("b-pools.yml", strings.Replace(nodePoolDoc(template()), "name: default", "name: b", 1))
	write("a-class.yaml", nodeClassDoc(""))
	write("c-pod.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"}}`)
	write("notes.txt", "not: [yaml")
	write("empty.yaml", "# nothing here\n---\n")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	eq(t, "pools", c.NodePools[0].Name, "b")
	eq(t, "classes", c.NodeClasses[0].Name, "default")
	eq(t, "other", c.Other[0].Namespace+"/"+c.Other[0].Name, "ns/p")
	eq(t, "other source", c.Other[0].Source, filepath.Join(dir, "c-pod.json"))

	write("d-bad.yaml", nodePoolDoc(template()+"weight: 0\n"))
	_, err = LoadDir(dir)
	var derr *DocumentError
	if !errors.As(err, &derr) || derr.Source != filepath.Join(dir, "d-bad.yaml") || derr.Index != 1 {
		t.Fatalf("errors carry their document: %#v", err)
	}
	var ferr *FieldError
	if !errors.As(err, &ferr) || ferr.Field != "spec.weight" {
		t.Fatalf("errors carry their field: %#v", err)
	}
	if _, err := LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory is an error")
	}
	if _, err := LoadFiles(filepath.Join(dir, "missing.yaml")); err == nil || !strings.HasPrefix(err.Error(), "read ") {
		t.Fatalf("a missing file is an error: %v", err)
	}
}

func TestOtherKindsAreKept(t *testing.T) {
	doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n---\n" +
		"apiVersion: eks.amazonaws.com/v1\nkind: NodeClass\nmetadata: {name: auto}\n"
	c := mustParse(t, doc)
	eq(t, "other", len(c.Other), 2)
	eq(t, "order", c.Other[1].Kind+" "+c.Other[1].APIVersion, "NodeClass eks.amazonaws.com/v1")
}

func TestConfigValidateReferences(t *testing.T) {
	doc := nodePoolDoc(template()) + "---\n" +
		strings.Replace(strings.Replace(nodePoolDoc(template()), "name: default", "name: other", 1), "kind: EC2NodeClass", "kind: AKSNodeClass", 1) +
		"---\n" + strings.Replace(nodeClassDoc(""), "name: default", "name: gpu", 1)
	c := mustParse(t, doc)
	err := c.Validate()
	want := `test.yaml: document 1 (NodePool default): spec.template.spec.nodeClassRef.name: EC2NodeClass "default" not found (have: "gpu")` + "\n" +
		`test.yaml: document 2 (NodePool other): spec.template.spec.nodeClassRef: group "karpenter.k8s.aws", kind "AKSNodeClass": Nodewright launches only group karpenter.k8s.aws, kind EC2NodeClass`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// TestWindowsPoolsRequireWindows: a Windows EC2NodeClass is refused under
// a NodePool that does not require kubernetes.io/os In [windows], and a
// Linux one under a pool that requires windows only; the message names the
// pool's requirements and the requirement to add.
func TestWindowsPoolsRequireWindows(t *testing.T) {
	windows, linux := "kubernetes.io/os In [windows]", "kubernetes.io/os In [linux]"
	req := func(r string) []NodeSelectorRequirementWithMinValues {
		if r == "" {
			return nil
		}
		key, rest, _ := strings.Cut(r, " In [")
		return []NodeSelectorRequirementWithMinValues{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: strings.Split(strings.TrimSuffix(rest, "]"), " ")}}
	}
	for _, tc := range []struct {
		family, alias, requirement, want string
	}{
		{"", "windows2022@latest", windows, ""},
		{AMIFamilyWindows2019, "", windows, ""},
		{"", "windows2025@latest", "", `NodePool p: spec.template.spec.requirements: EC2NodeClass "c" launches Windows2025 nodes: the NodePool must require kubernetes.io/os In [windows] (add {key: kubernetes.io/os, operator: In, values: [windows]})`},
		{"", "windows2022@latest", linux, `EC2NodeClass "c" launches Windows2022 nodes`},
		{"", "windows2022@latest", "kubernetes.io/os In [linux windows]", `EC2NodeClass "c" launches Windows2022 nodes`},
		{"", "al2023@latest", windows, `NodePool p: spec.template.spec.requirements: kubernetes.io/os In [windows]: EC2NodeClass "c" launches AL2023 (Linux) nodes`},
		{"", "al2@latest", linux, ""},
		{"", "bottlerocket@latest", "", ""},
		{AMIFamilyCustom, "", windows, ""},
	} {
		nc := &EC2NodeClass{}
		nc.Name = "c"
		if tc.alias != "" {
			nc.Spec.AMISelectorTerms = []AMISelectorTerm{{Alias: tc.alias}}
		} else {
			nc.Spec.AMIFamily = &tc.family
			nc.Spec.AMISelectorTerms = []AMISelectorTerm{{ID: "ami-0123456789abcdef0"}}
		}
		np := &NodePool{}
		np.Name = "p"
		np.Spec.Template.Spec.NodeClassRef = &NodeClassReference{Group: AWSGroup, Kind: EC2NodeClassKind, Name: "c"}
		np.Spec.Template.Spec.Requirements = req(tc.requirement)
		c := &Config{NodePools: []*NodePool{np}, NodeClasses: []*EC2NodeClass{nc}}
		errs := c.referenceErrors()
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s%s under %q: %v, want none", tc.family, tc.alias, tc.requirement, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
			t.Errorf("%s%s under %q: %v, want %q", tc.family, tc.alias, tc.requirement, errs, tc.want)
		}
	}
}

func TestConfigValidateBuiltObjects(t *testing.T) {
	np := &NodePool{}
	np.Name = "built"
	np.Spec.Template.Spec.NodeClassRef = &NodeClassReference{Group: AWSGroup, Kind: EC2NodeClassKind, Name: "x"}
	np.Spec.Template.Spec.Requirements = []NodeSelectorRequirementWithMinValues{}
	np.Spec.Limits = Limits{corev1.ResourceCPU: resource.MustParse("-1")}
	c := &Config{NodePools: []*NodePool{np}}
	want := `NodePool built: spec.limits[cpu]: "-1" must not be negative` + "\n" +
		`NodePool built: spec.template.spec.nodeClassRef.name: EC2NodeClass "x" not found (have: none)`
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestStatusUnknownFieldsIgnoredSpecUnknownFieldsNot(t *testing.T) {
	doc := nodeClassDoc("") + "status:\n  somethingNew: true\n  subnets: [{id: subnet-1, zone: us-east-1a, newField: x}]\n"
	mustParse(t, doc)
	_, err := Parse([]byte(nodeClassDoc("somethingNew: true\n")), "test.yaml")
	if err == nil || err.Error() != ncPrefix+"spec.somethingNew: unknown field" {
		t.Fatalf("got %v", err)
	}
}

func TestLeadingSeparatorsAndCommentsDoNotCount(t *testing.T) {
	doc := "---\n# a comment\n---\n" + nodePoolDoc(template()+"weight: 0\n") + "--- # trailing\n"
	_, err := Parse([]byte(doc), "sep.yaml")
	if err == nil || !strings.HasPrefix(err.Error(), "sep.yaml: document 1 (NodePool default): spec.weight") {
		t.Fatalf("got %v", err)
	}
}

func TestConfigTooManyNodePools(t *testing.T) {
	c := &Config{NodeClasses: []*EC2NodeClass{{}}}
	c.NodeClasses[0].Name = "x"
	for i := 0; i <= MaxNodePools; i++ {
		np := &NodePool{}
		np.Name = fmt.Sprintf("p%d", i)
		np.Spec.Template.Spec.NodeClassRef = &NodeClassReference{Group: AWSGroup, Kind: EC2NodeClassKind, Name: "x"}
		c.NodePools = append(c.NodePools, np)
	}
	err := c.Validate()
	want := fmt.Sprintf("%d NodePools: Nodewright accepts at most %d", MaxNodePools+1, MaxNodePools)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %q first", err, want)
	}
	c.NodePools = c.NodePools[:MaxNodePools]
	if err := c.Validate(); err != nil && strings.Contains(err.Error(), "accepts at most") {
		t.Fatalf("%d NodePools refused: %v", MaxNodePools, err)
	}
}
