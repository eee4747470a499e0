package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// version is stamped at build time (-ldflags "-X main.version=v1.2.3");
// otherwise the module version or VCS revision from the build info is shown.
var version = ""

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // bad input, or the plan failed
	exitUsage = 2 // bad command line
)

const usage = `nodewright: the operator CLI of Nodewright, the node autoscaler for EKS.

Usage:
  nodewright status [flags]              list the NodeClaims in the state table, with totals per NodePool
  nodewright explain POD [flags]         say why a pod is pending or where it was placed, from the recorded decisions
  nodewright validate DIR                load and validate the NodePools and EC2NodeClasses in DIR
  nodewright plan [-f FILE]... [flags]   print the nodes Nodewright would launch for a cluster snapshot
  nodewright prices [-region R] [-o FILE] write a region's on-demand prices and offerings, for plan -prices
  nodewright webhook apply [flags]       register the pending-pod webhook in the cluster (token read from Secrets Manager)
  nodewright migrate -cluster C [flags]  print NodePools and EC2NodeClasses for the node groups Cluster Autoscaler scales
  nodewright version                     print the version
  nodewright help [COMMAND]              print this help, or a command's

Run 'nodewright help COMMAND' (status, explain, validate, plan, prices, webhook, migrate) for a command's flags.
`

// cli runs commands; solve is the scheduler, webhook reaches AWS and the
// cluster, state reads the state table (stand-ins in tests of the command
// line itself; zero: the real ones).
type cli struct {
	solve     func(scheduling.Input) (*scheduling.Result, error)
	webhook   webhookDeps
	state     stateDeps
	migration migrateDeps
	// pricesDeps read region figures from AWS (zero: never).
	pricesDeps pricesDeps
}

// run executes the command line args and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli{solve: scheduling.Solve, pricesDeps: awsPricesDeps()}.run(args, stdin, stdout, stderr)
}

func (c cli) run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "status":
		return c.status(args[1:], stdout, stderr)
	case "explain":
		return c.explain(args[1:], stdout, stderr)
	case "validate":
		return c.validate(args[1:], stdout, stderr)
	case "plan":
		return c.plan(args[1:], stdin, stdout, stderr)
	case "prices":
		return c.prices(args[1:], stdout, stderr)
	case "webhook":
		return c.webhookCmd(args[1:], stdout, stderr)
	case "migrate":
		return c.migrate(args[1:], stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "nodewright %s\n", versionString())
		return exitOK
	case "help", "-h", "-help", "--help":
		if len(args) < 2 {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		switch args[1] {
		case "status", "explain", "validate", "plan", "prices", "migrate":
			// Asked-for help goes to stdout ('nodewright help status | less').
			return c.run([]string{args[1], "-h"}, stdin, stdout, stdout)
		case "webhook":
			return c.webhookCmd([]string{"-h"}, stdout, stderr)
		case "version":
			fmt.Fprint(stdout, "Usage: nodewright version\n\nPrints the version: the one stamped at build time, else the module version\nand VCS revision Go recorded, and the Go version.\n")
			return exitOK
		case "help":
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "nodewright help: no command %q\n\n%s", args[1], usage)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "nodewright: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}

// versionString is the stamped version, else the build's module version and
// VCS revision.
func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v + " " + info.GoVersion
}
