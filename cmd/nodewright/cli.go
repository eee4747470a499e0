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
  nodewright plan [-f FILE]... [flags]   print the nodes Nodewright would launch for a cluster snapshot
  nodewright webhook apply [flags]       register the pending-pod webhook in the cluster (token read from Secrets Manager)
  nodewright version                     print the version
  nodewright help [plan|webhook]         print this help, or a command's

Run 'nodewright help plan' or 'nodewright help webhook' for a command's flags.
`

// cli runs commands; solve is the scheduler and webhook reaches AWS and the
// cluster (stand-ins in tests of the command line itself; zero: the real
// ones).
type cli struct {
	solve   func(scheduling.Input) (*scheduling.Result, error)
	webhook webhookDeps
}

// run executes the command line args and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli{solve: scheduling.Solve}.run(args, stdin, stdout, stderr)
}

func (c cli) run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "plan":
		return c.plan(args[1:], stdin, stdout, stderr)
	case "webhook":
		return c.webhookCmd(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "nodewright %s\n", versionString())
		return exitOK
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[1] == "plan" {
			return c.plan([]string{"-h"}, stdin, stdout, stderr)
		}
		if len(args) > 1 && args[1] == "webhook" {
			return c.webhookCmd([]string{"-h"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
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
