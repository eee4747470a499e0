// Command infra is Nodewright's CDK app: `cdk synth` / `cdk deploy` run it
// (cdk.json: "go run ./infra"). It reads context values (-c nodewright:KEY=VALUE),
// loads and validates the Karpenter configuration, cross-compiles the
// functions, synthesizes the stack, and writes the Kubernetes manifests
// (webhook template, RBAC) under cdk.out/nodewright/<stack>/.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/infra/stack"
)

func main() {
	err := run(nil)
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodewright:", err)
		os.Exit(1)
	}
}

// run synthesizes the app; appProps (nil from the command line, where the CDK
// CLI passes context and output directory through the environment) lets
// tests pass them directly.
func run(appProps *awscdk.AppProps) error {
	app := awscdk.NewApp(appProps)
	c := contextOf(app)
	props, err := c.props()
	if err != nil {
		return err
	}
	root, err := stack.ModuleRoot(".")
	if err != nil {
		return err
	}
	cfg, warnings, err := stack.LoadConfig(c.str("config", ""))
	if err != nil {
		return err
	}
	props.Config, props.ConfigWarnings = cfg, warnings
	cache := filepath.Join(root, ".cache", "infra")
	if props.FunctionAssets, err = stack.BuildFunctions(root, filepath.Join(cache, "functions")); err != nil {
		return err
	}
	props.StagingDir = filepath.Join(cache, "staging")
	name := c.str("stackName", "Nodewright-"+props.ClusterName)
	st, err := stack.New(app, name, props)
	if err != nil {
		return err
	}
	asm := app.Synth(nil)
	return writeManifests(st, filepath.Join(*asm.Directory(), "nodewright", name))
}

// writeManifests writes the webhook template and the RBAC manifest beside
// the cloud assembly.
func writeManifests(st *stack.Stack, dir string) error {
	files, err := st.Manifests()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write manifests: %w", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("write manifests: %w", err)
		}
	}
	return nil
}
