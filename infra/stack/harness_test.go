package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// The package's tests share the function binaries (built once, for real) and
// synthesize each stack variant once; synthesis through jsii is the
// expensive part.
var (
	buildOnce  sync.Once
	buildDir   string
	buildErr   error
	assets     map[string]string
	variantsMu sync.Mutex
	variants   = map[string]*synthesized{}
)

// testEnv is the environment the jsii kernel (node) must start with:
// template validation is most of a synth's wall time and not what these tests
// check (the app's own test, package main, synthesizes with it on), and Node
// 20's end-of-life banner is noise.
var testEnv = []string{"CDK_VALIDATION=false", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20"}

func TestMain(m *testing.M) {
	// jsii-runtime-go captures the environment for its node process while
	// the CDK packages initialize, before TestMain runs, so os.Setenv here
	// would come too late: re-run the test binary with the variables set.
	if os.Getenv("CDK_VALIDATION") == "" {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), testEnv...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				os.Exit(exit.ExitCode())
			}
			fmt.Fprintln(os.Stderr, "re-run test binary:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	jsii.Close()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// functionAssets builds the functions once per test binary.
func functionAssets(t *testing.T) map[string]string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "nodewright-infra-test-")
		if buildErr != nil {
			return
		}
		root, err := ModuleRoot(".")
		if err != nil {
			buildErr = err
			return
		}
		assets, buildErr = BuildFunctions(root, filepath.Join(buildDir, "functions"))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return assets
}

// synthesized is one synthesized stack variant.
type synthesized struct {
	stack       *Stack
	template    assertions.Template
	annotations assertions.Annotations
	json        map[string]any
}

// resources returns the template's resources of type typ, by logical ID.
func (s *synthesized) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.json["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

// one returns the single resource of type typ whose logical ID starts with
// prefix.
func (s *synthesized) one(t *testing.T, typ, prefix string) map[string]any {
	t.Helper()
	var found []map[string]any
	for id, r := range s.resources(typ) {
		if strings.HasPrefix(id, prefix) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s resources with ID prefix %q", len(found), typ, prefix)
	}
	return found[0]["Properties"].(map[string]any)
}

// testConfigDir writes files (name -> content) into a new directory.
func testConfigDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// defaultConfigDir is the repository's default configuration (the
// getting-started pair for cluster demo-cluster).
func defaultConfigDir(t *testing.T) string {
	t.Helper()
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "infra", "config")
}

// baseProps are props for cluster demo-cluster with the default
// configuration.
func baseProps(t *testing.T) Props {
	t.Helper()
	cfg, warnings, err := LoadConfig(defaultConfigDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return Props{
		ClusterName:    "demo-cluster",
		Config:         cfg,
		ConfigWarnings: warnings,
		FunctionAssets: functionAssets(t),
		StagingDir:     filepath.Join(buildDir, "staging"),
	}
}

// variant synthesizes (once) the stack named name with props edited by edit,
// with cdk-nag's AwsSolutions checks applied.
func variant(t *testing.T, name string, edit func(*Props)) *synthesized {
	t.Helper()
	props := baseProps(t)
	variantsMu.Lock()
	defer variantsMu.Unlock()
	if v, ok := variants[name]; ok {
		return v
	}
	if edit != nil {
		edit(&props)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(buildDir, "out-"+name))})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true), Reports: jsii.Bool(false)}), nil)
	st, err := New(app, "Nodewright-"+name, props)
	if err != nil {
		t.Fatal(err)
	}
	tpl := assertions.Template_FromStack(st.Stack, nil)
	v := &synthesized{stack: st, template: tpl, annotations: assertions.Annotations_FromStack(st.Stack)}
	raw, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &v.json); err != nil {
		t.Fatal(err)
	}
	variants[name] = v
	return v
}

// defaultStack is the stack with default props.
func defaultStack(t *testing.T) *synthesized { return namedVariant(t, "default") }

// messages formats annotation messages for a failure report.
func messages(list *[]*cxapi.SynthesisMessage) string {
	var out []string
	for _, m := range *list {
		out = append(out, fmt.Sprintf("%s: %v", *m.Id, m.Entry.Data))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
