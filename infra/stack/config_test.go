package stack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/refdata"
)

const goodClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-demo-cluster
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo-cluster
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo-cluster
`

const goodPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
`

func TestLoadConfigDefault(t *testing.T) {
	cfg, warnings, err := LoadConfig(defaultConfigDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.NodePools) != 1 || len(cfg.NodeClasses) != 1 || len(warnings) != 0 {
		t.Fatalf("%d NodePools, %d EC2NodeClasses, warnings %v", len(cfg.NodePools), len(cfg.NodeClasses), warnings)
	}
	if err := checkNodeRoles(cfg, "KarpenterNodeRole-demo-cluster"); err != nil {
		t.Fatal(err)
	}
}

// A bad configuration fails the synth with the file, the document and the
// field path of the mistake.
func TestLoadConfigErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"bad operator", map[string]string{"class.yaml": goodClass,
			"pool.yaml": strings.Replace(goodPool, "operator: In", "operator: Sometimes", 1)},
			[]string{"pool.yaml", "NodePool default", "spec.template.spec.requirements[0].operator"}},
		{"unknown field", map[string]string{"class.yaml": goodClass,
			"pool.yaml": strings.Replace(goodPool, "  template:", "  tempalte: {}\n  template:", 1)},
			[]string{"pool.yaml", "tempalte"}},
		{"yaml syntax", map[string]string{"class.yaml": goodClass, "pool.yaml": goodPool + "  limits: [\n"},
			[]string{"pool.yaml", "line"}},
		{"missing node class", map[string]string{"pool.yaml": goodPool},
			[]string{"pool.yaml", "default"}},
		{"old api version", map[string]string{"class.yaml": goodClass,
			"pool.yaml": strings.Replace(goodPool, "karpenter.sh/v1", "karpenter.sh/v1beta1", 1)},
			[]string{"pool.yaml", "v1beta1"}},
		{"no NodePool", map[string]string{"class.yaml": goodClass}, []string{"no NodePool"}},
		{"empty directory", map[string]string{}, []string{"no NodePool"}},
		// Issue 20: a field Nodewright would ignore fails the synth too.
		{"static pool with a cpu limit refused", map[string]string{"class.yaml": goodClass, "pool.yaml": goodPool + "  replicas: 3\n  limits: {cpu: 8}\n"},
			[]string{"pool.yaml: document 1 (NodePool default): spec.limits[cpu]: only limits.nodes is supported on a static NodePool (replicas is set)"}},
		{"instance profile refused", map[string]string{"pool.yaml": goodPool,
			"class.yaml": strings.Replace(goodClass, "role: KarpenterNodeRole-demo-cluster", "instanceProfile: my-profile", 1)},
			[]string{"class.yaml: document 1 (EC2NodeClass default): spec.instanceProfile: Nodewright launches nodes with its stack's instance profile"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadConfig(testConfigDir(t, tc.files))
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	if _, _, err := LoadConfig(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing directory loaded")
	}
}

// Documents of other kinds are kept out with a warning: users keep the
// workloads of Karpenter's examples beside their NodePools.
func TestLoadConfigWarnsOnOtherKinds(t *testing.T) {
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: inflate\nspec: {}\n"
	cfg, warnings, err := LoadConfig(testConfigDir(t, map[string]string{"all.yaml": goodClass + "---\n" + goodPool + "---\n" + deploy}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.NodePools) != 1 || len(warnings) != 1 || !strings.Contains(warnings[0], "all.yaml: document 3 (apps/v1 Deployment inflate) is not a NodePool or EC2NodeClass: ignored") {
		t.Fatalf("warnings %v", warnings)
	}
}

func TestCheckNodeRoles(t *testing.T) {
	cases := []struct {
		name, class string
		profile     string // set on the loaded class (the loader refuses it in YAML)
		want        []string
	}{
		{"other role", strings.Replace(goodClass, "KarpenterNodeRole-demo-cluster", "SomeoneElsesRole", 1), "",
			[]string{"class.yaml", "EC2NodeClass default", "spec.role", `"SomeoneElsesRole"`, "nodewright:nodeRole=SomeoneElsesRole"}},
		{"instance profile", goodClass, "my-profile",
			[]string{"class.yaml", "spec.instanceProfile", "not supported"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := LoadConfig(testConfigDir(t, map[string]string{"class.yaml": tc.class, "pool.yaml": goodPool}))
			if err != nil {
				t.Fatal(err)
			}
			if tc.profile != "" {
				cfg.NodeClasses[0].Spec.InstanceProfile = &tc.profile
			}
			err = checkNodeRoles(cfg, "KarpenterNodeRole-demo-cluster")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

// The users' examples load unchanged, in the groups that form a
// configuration, and name the node role the stack creates for their cluster.
func TestExamplesLoad(t *testing.T) {
	dir, err := refdata.Examples()
	if err != nil {
		t.Fatal(err)
	}
	groups := []struct {
		cluster string
		files   []string
	}{
		{"demo-cluster", []string{"getting-started.yaml", "inflate.yaml"}},
		{"my-production-cluster", []string{"ec2nodeclass-default.yaml", "nodepool-default.yaml"}},
		{"my-production-cluster", []string{"ec2nodeclass-default.yaml", "nodepool-spot-and-fallback.yaml"}},
		{"my-production-cluster", []string{"ec2nodeclass-default.yaml", "nodepool-gpu-h100.yaml"}},
	}
	for _, g := range groups {
		t.Run(strings.Join(g.files, "+"), func(t *testing.T) {
			files := map[string]string{}
			for _, f := range g.files {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				files[f] = string(b)
			}
			cfg, _, err := LoadConfig(testConfigDir(t, files))
			if err != nil {
				t.Fatal(err)
			}
			props := Props{ClusterName: g.cluster}
			if err := checkNodeRoles(cfg, "KarpenterNodeRole-"+props.ClusterName); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// What the functions receive loads with the same loader and equals what was
// validated at synth.
func TestStagedConfigRoundTrip(t *testing.T) {
	dir, err := refdata.Examples()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range []string{"ec2nodeclass-default.yaml", "nodepool-default.yaml", "nodepool-spot-and-fallback.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(b)
	}
	cfg, _, err := LoadConfig(testConfigDir(t, files))
	if err != nil {
		t.Fatal(err)
	}
	staging := t.TempDir()
	staged, err := stageConfig(cfg, staging)
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := filepath.Join(staged.LayerDir, strings.TrimPrefix(ConfigLayerPath, "/opt/"))
	data, err := os.ReadFile(filepath.Join(cfgDir, configFileName))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != staged.Hash {
		t.Fatal("hash is not the file's SHA-256")
	}
	back, warnings, err := LoadConfig(cfgDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("warnings %v", warnings)
	}
	same := func(a, b any) bool {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return string(ja) == string(jb)
	}
	if !same(cfg.NodePools, back.NodePools) || !same(cfg.NodeClasses, back.NodeClasses) {
		t.Fatalf("round trip changed the configuration:\n%s", data)
	}
	for i := range cfg.NodePools {
		if cfg.NodePools[i].Hash() != back.NodePools[i].Hash() {
			t.Errorf("NodePool %s hash changed", cfg.NodePools[i].Name)
		}
	}
	again, err := stageConfig(cfg, staging)
	if err != nil || again != staged {
		t.Fatalf("staging is not deterministic: %v %v", again, err)
	}
}

func TestPropsDefaultsAndErrors(t *testing.T) {
	base := func() Props {
		return Props{ClusterName: "c1", Config: &apis.Config{}, StagingDir: "/tmp/x",
			FunctionAssets: map[string]string{FnProvision: "a", FnInterruption: "b", FnConsolidation: "c", FnWebhook: "d", FnRotation: "e"}}
	}
	p, err := base().withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if p.NodeRoleName != "KarpenterNodeRole-c1" || p.SweepSchedule != "rate(1 minute)" || p.ConsolidationSchedule != "rate(5 minutes)" ||
		p.PendingPodAgeThreshold != 5*time.Minute || p.LaunchFailureThreshold != 5 || p.FunctionErrorThreshold != 1 ||
		p.WebhookTimeoutSeconds != 2 || p.WebhookTokenRotationDays != 30 || p.LogLevel != "info" || p.LogRetention == "" ||
		p.RegistrationTimeout != 15*time.Minute {
		t.Fatalf("defaults %+v", p)
	}
	cases := []struct {
		name string
		edit func(*Props)
		want string
	}{
		{"no cluster", func(p *Props) { p.ClusterName = "" }, "cluster name"},
		{"bad cluster", func(p *Props) { p.ClusterName = "a/b" }, "cluster name"},
		{"no config", func(p *Props) { p.Config = nil }, "nodewright:config"},
		{"no asset", func(p *Props) { delete(p.FunctionAssets, FnWebhook) }, "function webhook"},
		{"no staging", func(p *Props) { p.StagingDir = "" }, "staging"},
		{"short pending threshold", func(p *Props) { p.PendingPodAgeThreshold = time.Second }, "at least 1m"},
		{"negative threshold", func(p *Props) { p.LaunchFailureThreshold = -1 }, "positive"},
		{"webhook timeout", func(p *Props) { p.WebhookTimeoutSeconds = 31 }, "1-30"},
		{"token rotation", func(p *Props) { p.WebhookTokenRotationDays = 1001 }, "1-1000"},
		{"network without groups", func(p *Props) { p.Network = &Network{SubnetIDs: []string{"subnet-0123456789abcdef0"}} }, "both subnet IDs"},
		{"bad subnet", func(p *Props) {
			p.Network = &Network{SubnetIDs: []string{"vpc-0123456789abcdef0"}, SecurityGroupIDs: []string{"sg-0123456789abcdef0"}}
		}, "not a subnet ID"},
		{"bad group", func(p *Props) {
			p.Network = &Network{SubnetIDs: []string{"subnet-0123456789abcdef0"}, SecurityGroupIDs: []string{"sg-xyz"}}
		}, "not a security group ID"},
		{"two alarm targets", func(p *Props) { p.AlarmEmail, p.AlarmTopicArn = "a@b.c", "arn:aws:sns:us-east-1:1:t" }, "at most one"},
		{"short registration timeout", func(p *Props) { p.RegistrationTimeout = time.Minute }, "want 2m0s to 24h0m0s"},
		{"long registration timeout", func(p *Props) { p.RegistrationTimeout = 25 * time.Hour }, "want 2m0s to 24h0m0s"},
		{"bad SSM parameter", func(p *Props) { p.SSMParameters = []string{"/team/ami with spaces"} }, "SSM parameter"},
		{"SSM wildcard", func(p *Props) { p.SSMParameters = []string{"/team/*"} }, "SSM parameter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.edit(&p)
			if _, err := p.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
