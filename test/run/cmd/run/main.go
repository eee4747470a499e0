// Command run is `make run`: the main job on the local cloud, end to end.
// It brings the local cloud up for the cluster the users' example
// EC2NodeClass discovers, creates the inflate Deployment, makes one
// provisioning pass (read, solve, launch with EC2 CreateFleet) and waits
// until every pod runs on the launched nodes; then it prints a summary and
// stops everything (or, with -keep, leaves the cloud up until Ctrl-C).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/run"
)

func main() {
	if err := realMain(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "make run: FAILED: %v\n", err)
		os.Exit(1)
	}
}

type flags struct {
	replicas  int
	keep      bool
	verbose   bool
	timeout   time.Duration
	bootDelay time.Duration
}

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: make run ARGS="[flags]"   (or go run ./test/run/... [flags])

Runs Nodewright's main job on the local cloud: loads the example NodePool and
EC2NodeClass unchanged, creates the inflate Deployment (pending: no nodes),
makes one provisioning pass (read the cluster, solve, launch each NodeClaim
with EC2 CreateFleet through the AWS front) and waits until every pod runs on
the launched nodes. Prints the plan, the launches and a summary with timings.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.IntVar(&f.replicas, "replicas", 20, "replicas of the inflate Deployment")
	fs.BoolVar(&f.keep, "keep", false, "leave the local cloud up after the run (Ctrl-C stops it) and print its kubeconfig")
	fs.BoolVar(&f.verbose, "v", false, "also print the provisioning pass's JSON logs on stderr")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "bound on each wait (pods pending, nodes and pods running)")
	fs.DurationVar(&f.bootDelay, "boot-delay", 2*time.Second, "how long a launched instance takes to register as a node")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if f.replicas < 1 {
		return f, fmt.Errorf("-replicas %d: want at least 1", f.replicas)
	}
	return f, nil
}

func realMain(args []string, stdout, stderr io.Writer) error {
	f, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := run.NewProgress(stdout, time.Now)
	fmt.Fprintln(stdout, "make run: Nodewright provisions for pending pods on the local cloud")

	start := time.Now()
	cfg, err := run.LoadConfig()
	if err != nil {
		return err
	}
	p.Printf("configuration: NodePool %s, EC2NodeClass %s (discovers cluster %s), loaded unchanged from %s",
		cfg.NodePools[0].Name, cfg.NodeClasses[0].Name, cfg.Cluster, filepath.Dir(cfg.Files[0]))
	extra := []run.Phase{{Name: "configuration", Duration: time.Since(start)}}

	start = time.Now()
	lc, err := localcloud.Start(ctx, localcloud.Options{Cluster: cfg.Cluster, BootDelay: f.bootDelay})
	if err != nil {
		return fmt.Errorf("local cloud: %w", err)
	}
	defer lc.Close()
	extra = append(extra, run.Phase{Name: "local cloud up", Duration: time.Since(start)})
	p.Printf("local cloud up: cluster %s (Kubernetes %s), AWS front %s, logs in %s",
		lc.Cluster.Name, localcloud.KubernetesVersion, lc.AWS.URL(), filepath.Join(lc.StateDir, "logs"))

	logFile, log, err := passLog(lc.StateDir, f.verbose, stderr)
	if err != nil {
		return err
	}
	defer logFile.Close()
	res, err := run.Scenario(ctx, lc, cfg, run.Options{Replicas: f.replicas, Timeout: f.timeout, Progress: p, Log: log})
	if err != nil {
		tails := lc.LogTails(15)
		fmt.Fprintf(stderr, "local cloud logs (tail) in %s/logs:\n%s\n", lc.StateDir, tails["localcloud"])
		return err
	}
	fmt.Fprint(stdout, run.Summary(res, extra))
	if !f.keep {
		fmt.Fprintln(stdout, "stopping the local cloud (-keep leaves it up)")
		return nil
	}
	fmt.Fprintf(stdout, "the local cloud stays up: export KUBECONFIG=%s\n  AWS endpoint %s (region %s, any access key)\nCtrl-C stops it.\n",
		lc.Kubeconfig, lc.AWS.URL(), lc.Options.Region)
	<-ctx.Done()
	return nil
}

// passLog is the provisioning pass's JSON log: a file in the state
// directory, and stderr too with -v.
func passLog(stateDir string, verbose bool, stderr io.Writer) (*os.File, *slog.Logger, error) {
	path := filepath.Join(stateDir, "logs", "provision.log")
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("provision log: %w", err)
	}
	var w io.Writer = f
	if verbose {
		w = io.MultiWriter(f, stderr)
	}
	return f, slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), nil
}
