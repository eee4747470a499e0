package apis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/refdata"
)

// exampleFiles lists the configuration files of the shared examples directory.
func exampleFiles(t testing.TB) []string {
	t.Helper()
	dir, err := refdata.Examples()
	if err != nil {
		t.Fatalf("examples dir: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read examples: %v", err)
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		t.Fatalf("no example files in %s", dir)
	}
	return files
}

func example(t *testing.T, name string) string {
	t.Helper()
	p, err := refdata.Example(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exampleChecks holds assertions on the decoded values of known examples;
// files without an entry must still load and validate.
var exampleChecks = map[string]func(t *testing.T, c *Config){
	"nodepool-default.yaml": func(t *testing.T, c *Config) {
		np := onlyNodePool(t, c, "default")
		eq(t, "weight", *np.Spec.Weight, int32(10))
		eq(t, "budgets", len(np.Spec.Disruption.Budgets), 1)
		eq(t, "budget nodes", np.Spec.Disruption.Budgets[0].Nodes, "10%")
		eq(t, "requirements", len(np.Spec.Template.Spec.Requirements), 5)
		eq(t, "zone values", strings.Join(np.Spec.Template.Spec.Requirements[4].Values, ","), "us-east-1a,us-east-1b,us-east-1c")
		eq(t, "limits cpu", qty(np.Spec.Limits, "cpu").Cmp(resource.MustParse("1000")), 0)
		eq(t, "limits memory", qty(np.Spec.Limits, "memory").Cmp(resource.MustParse("2000Gi")), 0)
		eq(t, "consolidateAfter", *np.Spec.Disruption.ConsolidateAfter.Duration, 30*time.Second)
		eq(t, "policy", np.Spec.Disruption.ConsolidationPolicy, ConsolidationPolicyWhenEmptyOrUnderutilized)
		eq(t, "expireAfter (default)", *np.Spec.Template.Spec.ExpireAfter.Duration, 720*time.Hour)
		eq(t, "label", np.Spec.Template.ObjectMeta.Labels["team"], "platform")
		eq(t, "nodeClassRef", *np.Spec.Template.Spec.NodeClassRef, NodeClassReference{Group: AWSGroup, Kind: EC2NodeClassKind, Name: "default"})
	},
	"ec2nodeclass-default.yaml": func(t *testing.T, c *Config) {
		nc := onlyNodeClass(t, c, "default")
		eq(t, "hop limit", *nc.Spec.MetadataOptions.HTTPPutResponseHopLimit, int64(2))
		eq(t, "httpTokens", *nc.Spec.MetadataOptions.HTTPTokens, "required")
		eq(t, "role", nc.Spec.Role, "KarpenterNodeRole-my-production-cluster")
		eq(t, "alias", nc.Spec.AMISelectorTerms[0].Alias, "al2023@latest")
		eq(t, "AMIFamily", nc.AMIFamily(), AMIFamilyAL2023)
		bd := nc.Spec.BlockDeviceMappings[0]
		eq(t, "device", *bd.DeviceName, "/dev/xvda")
		eq(t, "volumeSize", bd.EBS.VolumeSize.Cmp(resource.MustParse("100Gi")), 0)
		eq(t, "iops", *bd.EBS.IOPS, int64(3000))
		eq(t, "throughput", *bd.EBS.Throughput, int64(125))
		eq(t, "tags", len(nc.Spec.Tags), 3)
		eq(t, "subnet tag", nc.Spec.SubnetSelectorTerms[0].Tags["karpenter.sh/discovery"], "my-production-cluster")
	},
	"getting-started.yaml": func(t *testing.T, c *Config) {
		np := onlyNodePool(t, c, "default")
		nc := onlyNodeClass(t, c, "default")
		gt := np.Spec.Template.Spec.Requirements[5]
		eq(t, "Gt requirement", gt.Key+" "+string(gt.Operator)+" "+gt.Values[0], "karpenter.k8s.aws/instance-generation Gt 2")
		eq(t, "limits cpu", qty(np.Spec.Limits, "cpu").Value(), int64(8))
		eq(t, "expireAfter", np.Spec.Template.Spec.ExpireAfter.Raw, "720h")
		eq(t, "consolidateAfter", *np.Spec.Disruption.ConsolidateAfter.Duration, time.Minute)
		eq(t, "budgets (default)", np.Spec.Disruption.Budgets, []Budget{{Nodes: "10%"}})
		eq(t, "pinned alias", nc.Spec.AMISelectorTerms[0].Alias, "al2023@v20251120")
		eq(t, "hop limit (default)", *nc.Spec.MetadataOptions.HTTPPutResponseHopLimit, int64(1))
		if err := c.Validate(); err != nil {
			t.Errorf("the getting-started pair should validate as a whole: %v", err)
		}
	},
	"inflate.yaml": func(t *testing.T, c *Config) {
		eq(t, "objects", len(c.NodePools)+len(c.NodeClasses), 0)
		eq(t, "other", len(c.Other), 1)
		d := c.Other[0]
		eq(t, "deployment", d.APIVersion+" "+d.Kind+" "+d.Name+" "+d.Namespace, "apps/v1 Deployment inflate ")
		eq(t, "index", d.Index, 1)
		if !strings.Contains(string(d.JSON), `"cpu":"250m"`) {
			t.Errorf("Other keeps the document as JSON, got %s", d.JSON)
		}
	},
	"nodepool-gpu-h100.yaml": func(t *testing.T, c *Config) {
		np := onlyNodePool(t, c, "gpu-h100")
		eq(t, "gpu limit", qty(np.Spec.Limits, "nvidia.com/gpu").Value(), int64(64))
		eq(t, "policy", np.Spec.Disruption.ConsolidationPolicy, ConsolidationPolicyWhenEmpty)
		eq(t, "taint", np.Spec.Template.Spec.Taints[0], corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule})
		eq(t, "family values", strings.Join(np.Spec.Template.Spec.Requirements[1].Values, ","), "p5,p5e")
	},
	"nodepool-gpu-training.yaml": func(t *testing.T, c *Config) {
		np := onlyNodePool(t, c, "gpu-training")
		eq(t, "gpu limit", qty(np.Spec.Limits, "nvidia.com/gpu").Value(), int64(16))
		eq(t, "consolidateAfter (default)", *np.Spec.Disruption.ConsolidateAfter.Duration, time.Duration(0))
		eq(t, "taint value", np.Spec.Template.Spec.Taints[0].Value, "true")
		eq(t, "pod", c.Other[0].Kind+" "+c.Other[0].Name, "Pod ml-training-job")
		eq(t, "pod index", c.Other[0].Index, 2)
	},
	"nodepool-spot-and-fallback.yaml": func(t *testing.T, c *Config) {
		eq(t, "pools", len(c.NodePools), 2)
		// Sorted by name.
		eq(t, "first", c.NodePools[0].Name, "on-demand-fallback")
		eq(t, "fallback weight", *c.NodePools[0].Spec.Weight, int32(1))
		eq(t, "spot weight", *c.NodePools[1].Spec.Weight, int32(10))
		eq(t, "categories", len(c.NodePools[1].Spec.Template.Spec.Requirements[1].Values), 9)
		d, ok := c.Origin(c.NodePools[0])
		eq(t, "origin", ok && d.Index == 2, true)
	},
}

func TestExamplesLoadAndValidate(t *testing.T) {
	for _, path := range exampleFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			c, err := LoadFiles(path)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if len(c.NodePools)+len(c.NodeClasses)+len(c.Other) == 0 {
				t.Fatal("no documents read")
			}
			for _, np := range c.NodePools {
				if err := np.Validate(); err != nil {
					t.Errorf("NodePool %s: %v", np.Name, err)
				}
			}
			for _, nc := range c.NodeClasses {
				if err := nc.Validate(); err != nil {
					t.Errorf("EC2NodeClass %s: %v", nc.Name, err)
				}
			}
			if check := exampleChecks[name]; check != nil {
				check(t, c)
			}
		})
	}
}

// The examples are several users' configurations, so they form valid
// wholes only in the combinations their README describes.
func TestExampleCombinationsValidate(t *testing.T) {
	for _, files := range [][]string{
		{"nodepool-default.yaml", "ec2nodeclass-default.yaml"},
		{"nodepool-spot-and-fallback.yaml", "ec2nodeclass-default.yaml"},
		{"nodepool-gpu-h100.yaml", "ec2nodeclass-default.yaml", "inflate.yaml"},
		{"getting-started.yaml", "inflate.yaml"},
	} {
		t.Run(strings.Join(files, "+"), func(t *testing.T) {
			var paths []string
			for _, f := range files {
				paths = append(paths, example(t, f))
			}
			c, err := LoadFiles(paths...)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestExampleDirectoryCrossChecks(t *testing.T) {
	dir, err := refdata.Examples()
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadDir(dir)
	if err != nil {
		t.Fatalf("every file loads: %v", err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("the whole directory repeats names and must not validate as one config")
	}
	msg := err.Error()
	for _, want := range []string{
		`getting-started.yaml: document 2 (EC2NodeClass default): metadata.name: duplicate EC2NodeClass name "default" (also in ` + filepath.Join(dir, "ec2nodeclass-default.yaml") + `: document 1)`,
		`nodepool-default.yaml: document 1 (NodePool default): metadata.name: duplicate NodePool name "default" (also in ` + filepath.Join(dir, "getting-started.yaml") + `: document 1)`,
		`nodepool-gpu-training.yaml: document 1 (NodePool gpu-training): spec.template.spec.nodeClassRef.name: EC2NodeClass "gpu-class" not found (have: "default")`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
}

func onlyNodePool(t *testing.T, c *Config, name string) *NodePool {
	t.Helper()
	np := c.NodePool(name)
	if np == nil {
		t.Fatalf("no NodePool %q", name)
	}
	return np
}

func onlyNodeClass(t *testing.T, c *Config, name string) *EC2NodeClass {
	t.Helper()
	nc := c.NodeClass(name)
	if nc == nil {
		t.Fatalf("no EC2NodeClass %q", name)
	}
	return nc
}

func qty(l Limits, name string) *resource.Quantity {
	q := l[corev1.ResourceName(name)]
	return &q
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !equalValues(got, want) {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
	}
}
