package setup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/names"
)

// The functions load the deployed configuration with the loader `nodewright
// validate` and the stack use: a field Nodewright would ignore (issue 20)
// stops the load with its path and what to do, and a valid one loads.
func TestConfigRefusesWhatNodewrightWouldIgnore(t *testing.T) {
	const class = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec:\n" +
		"  role: KarpenterNodeRole-demo\n  amiSelectorTerms: [{alias: al2023@latest}]\n" +
		"  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]\n  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]\n"
	const pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n" +
		"      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n" +
		"      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand, reserved]}]\n" +
		"      taints: [{key: team, effect: NoSchedule, timeAdded: '2026-01-01T00:00:00Z'}]\n"
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("class.yaml", class)
	write("pool.yaml", pool)
	_, _, err := Config(Options{Env: map[string]string{names.EnvConfigDir: dir}})
	want := `pool.yaml: document 1 (NodePool default): spec.template.spec.taints[0].timeAdded: timeAdded is set by Kubernetes`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	write("pool.yaml", strings.Replace(pool, ", timeAdded: '2026-01-01T00:00:00Z'", "", 1))
	pools, classes, err := Config(Options{Env: map[string]string{names.EnvConfigDir: dir}})
	if err != nil || len(pools) != 1 || len(classes) != 1 {
		t.Fatalf("valid configuration: %d pools, %d classes, %v", len(pools), len(classes), err)
	}
}

// The deployed configuration's NodeOverlays reach the functions, from the
// configuration directory or from the options that replace it.
func TestConfigLoadsNodeOverlays(t *testing.T) {
	dir := t.TempDir()
	const overlay = "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: savings}\nspec: {priceAdjustment: '-10%'}\n"
	if err := os.WriteFile(filepath.Join(dir, "overlay.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(Options{Env: map[string]string{names.EnvConfigDir: dir}})
	if err != nil || len(cfg.NodeOverlays) != 1 || cfg.NodeOverlays[0].Name != "savings" {
		t.Fatalf("from the directory: %+v, %v", cfg, err)
	}
	given, err := loadConfig(Options{NodePools: []*apis.NodePool{{}}, NodeOverlays: cfg.NodeOverlays})
	if err != nil || len(given.NodeOverlays) != 1 {
		t.Fatalf("from the options: %+v, %v", given, err)
	}
}
