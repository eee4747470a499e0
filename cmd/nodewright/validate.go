package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/nodewright/nodewright/shared/apis"
)

const validateUsage = `Usage: nodewright validate DIR

Loads the NodePools (karpenter.sh/v1) and EC2NodeClasses (karpenter.k8s.aws/v1)
in DIR's *.yaml, *.yml and *.json files (not its sub-directories) with the
loader the functions and the CDK app use, applies Karpenter's defaults and
validates them: every field, references from NodePools to EC2NodeClasses,
duplicate names. Every problem is printed, one a line, as
  FILE: document N (KIND NAME): FIELD.PATH: what is wrong
and the exit code is 1; a valid directory prints what it holds and exits 0.
Documents of other kinds are listed as ignored. A directory without a
NodePool is an error: Nodewright would never launch a node.

Flags:
`

// validate runs `nodewright validate`.
func (c cli) validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("nodewright validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), validateUsage)
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright validate: %v\n", err)
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "nodewright validate: want one directory (the configuration you deploy, e.g. infra/config), got %d arguments\n", fs.NArg())
		return exitUsage
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "nodewright validate: %s is not a directory: give the directory that holds the NodePool and EC2NodeClass YAML\n", dir)
		return exitUsage
	}
	cfg, err := apis.LoadDir(dir)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright validate: %s is not valid:\n%s\n", dir, indent(err.Error()))
		return exitError
	}
	if len(cfg.NodePools) == 0 {
		fmt.Fprintf(stderr, "nodewright validate: %s has no NodePool (apiVersion karpenter.sh/v1, kind NodePool): Nodewright would never launch a node\n", dir)
		return exitError
	}
	for _, d := range cfg.Other {
		fmt.Fprintf(stdout, "%s: document %d (%s %s %s) is not a NodePool or EC2NodeClass: ignored\n", d.Source, d.Index, d.APIVersion, d.Kind, d.Name)
	}
	for _, np := range cfg.NodePools {
		ref := "-"
		if r := np.Spec.Template.Spec.NodeClassRef; r != nil {
			ref = r.Name
		}
		fmt.Fprintf(stdout, "NodePool %s: valid (nodeClassRef %s)\n", np.Name, ref)
	}
	for _, nc := range cfg.NodeClasses {
		fmt.Fprintf(stdout, "EC2NodeClass %s: valid\n", nc.Name)
	}
	fmt.Fprintf(stdout, "%s: %d NodePools and %d EC2NodeClasses are valid\n", dir, len(cfg.NodePools), len(cfg.NodeClasses))
	return exitOK
}
