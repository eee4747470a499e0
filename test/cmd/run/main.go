// Command run is `make run`: Nodewright's whole job on the local cloud,
// played from a scenario file (test/scenarios/default.yaml unless
// SCENARIO names another). It loads the scenario's NodePools and
// EC2NodeClasses, brings the local cloud up for the cluster they discover,
// runs the three functions against it as AWS would (package player), shows
// the timeline as it happens, and writes report.json and report.html into
// an output directory it names at the end. It exits non-zero when the
// scenario fails or an expectation does not hold. Ctrl-C stops everything.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/player"
	"github.com/nodewright/nodewright/test/report"
	"github.com/nodewright/nodewright/test/run"
	"github.com/nodewright/nodewright/test/scenario"
)

// errFailed is a scenario that played but whose expectations did not hold.
var errFailed = errors.New("the scenario's expectations do not hold")

func main() {
	if err := realMain(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "make run: FAILED: %v\n", err)
		os.Exit(1)
	}
}

// DefaultScenario is played when no -scenario is given.
const DefaultScenario = "test/scenarios/default.yaml"

type flags struct {
	scenario  string
	out       string
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
		fmt.Fprint(fs.Output(), `Usage: make run [SCENARIO=file.yaml] [ARGS="flags"]   (or go run ./test/cmd/run [flags])

Plays a scenario on the local cloud with Nodewright's three functions run as
AWS runs them: pods pending, nodes launched with EC2 CreateFleet, spot
interruptions handled from the queue, consolidation. Shows the timeline as it
happens; writes report.json and report.html into an output directory it names
at the end; exits non-zero when the scenario fails or an expectation does not
hold. Scenario files: test/scenarios/ (format: README, "make run and scenarios").

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.scenario, "scenario", DefaultScenario, "the scenario file to play")
	fs.StringVar(&f.out, "out", "", "the report's output directory (default: a new directory under $TMPDIR)")
	fs.IntVar(&f.replicas, "replicas", 0, "replace the scenario's peak replica count (its largest scale step, and the waits and expectations that name it) with this")
	fs.BoolVar(&f.keep, "keep", false, "leave the local cloud up after the run (Ctrl-C stops it) and print its kubeconfig")
	fs.BoolVar(&f.verbose, "v", false, "also print the functions' JSON logs on stderr")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Minute, "bound on the whole scenario")
	fs.DurationVar(&f.bootDelay, "boot-delay", 0, "how long a launched instance takes to register as a node (default: the scenario's cloud.bootDelay, else 2s)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q (a scenario file is given with -scenario or SCENARIO=)", fs.Arg(0))
	}
	if f.replicas < 0 {
		return f, fmt.Errorf("-replicas %d: want at least 1", f.replicas)
	}
	return f, nil
}

func realMain(args []string, stdout, stderr io.Writer) error {
	f, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	sc, err := scenario.Load(f.scenario)
	if err != nil {
		return err
	}
	if f.replicas > 0 {
		sc.WithPeak(f.replicas)
	}
	cfg, err := player.LoadConfig(sc)
	if err != nil {
		return err
	}
	out := f.out
	if out == "" {
		if out, err = os.MkdirTemp("", "nodewright-run-"+sc.Name+"-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, f.timeout)
	defer cancel()

	p := run.NewProgress(stdout, time.Now)
	fmt.Fprintf(stdout, "make run: scenario %s (%s), %d steps\n", sc.Name, sc.File, len(sc.Steps))
	p.Printf("configuration: %d NodePools, %d EC2NodeClasses from %s (cluster %s)", len(cfg.NodePools), len(cfg.NodeClasses), strings.Join(cfg.Files, ", "), cfg.Cluster)
	opts := player.CloudOptions(sc, cfg)
	if f.bootDelay > 0 {
		opts.BootDelay = f.bootDelay
	}
	start := time.Now()
	lc, err := localcloud.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("local cloud: %w", err)
	}
	defer lc.Close()
	p.Printf("local cloud up in %s: cluster %s (Kubernetes %s), AWS front %s, zones %s, logs in %s",
		time.Since(start).Round(100*time.Millisecond), lc.Cluster.Name, localcloud.KubernetesVersion, lc.AWS.URL(),
		strings.Join(lc.Options.Zones, ","), filepath.Join(lc.StateDir, "logs"))

	logPath := filepath.Join(out, "functions.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("functions' log: %w", err)
	}
	defer logFile.Close()
	var log io.Writer = logFile
	if f.verbose {
		log = io.MultiWriter(logFile, stderr)
	}
	rep, playErr := player.Play(ctx, lc, sc, cfg, player.Options{Progress: p, Log: log})
	jsonPath, htmlPath, werr := rep.Write(out)
	fmt.Fprint(stdout, Summary(rep))
	if werr != nil {
		return werr
	}
	fmt.Fprintf(stdout, "report: %s\n        %s\nfunctions' log: %s\noutput directory: %s\n", htmlPath, jsonPath, logPath, out)
	if playErr != nil && sigCtx.Err() != nil {
		return fmt.Errorf("interrupted: %w; the local cloud is stopped", playErr)
	}
	if playErr != nil {
		tails := lc.LogTails(15)
		fmt.Fprintf(stderr, "local cloud logs (tail) in %s/logs:\n%s\n", lc.StateDir, tails["localcloud"])
		return playErr
	}
	if f.keep {
		fmt.Fprintf(stdout, "the local cloud stays up: export KUBECONFIG=%s\n  AWS endpoint %s (region %s, any access key)\nCtrl-C stops it.\n",
			lc.Kubeconfig, lc.AWS.URL(), lc.Options.Region)
		<-ctx.Done()
	}
	if !rep.Passed {
		return errFailed
	}
	return nil
}

// Summary is the closing text: the figures and each expectation.
func Summary(r *report.Report) string {
	var b strings.Builder
	s := r.Summary
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "\nscenario %s: %s in %.1f s\n", r.Scenario, verdict, r.Seconds)
	if r.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", r.Error)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  pods' time to Running\tp50 %.1f s, p99 %.1f s (%d pods)\n", s.PodsToRunningP50Seconds, s.PodsToRunningP99Seconds, s.PodsMeasured)
	fmt.Fprintf(tw, "  nodes\t%d launched, %d at the end\n", s.NodesLaunched, s.NodesAtEnd)
	ready := 0
	for _, nc := range r.NodeClaims {
		if nc.Ready == "True" {
			ready++
		}
	}
	fmt.Fprintf(tw, "  NodeClaims (kubectl get nodeclaims)\t%d at the end, %d Ready\n", len(r.NodeClaims), ready)
	fmt.Fprintf(tw, "  price per hour\t$%.4f peak, $%.4f at the end\n", s.PricePerHourPeak, s.PricePerHourEnd)
	fmt.Fprintf(tw, "  one m5.xlarge on-demand node group\t$%.4f at the peak (%d nodes", s.FixedNodeGroupPricePerHourPeak, s.FixedNodeGroupNodesPeak)
	if s.FixedNodeGroupUnplaced > 0 {
		fmt.Fprintf(tw, "; %d pods it cannot run", s.FixedNodeGroupUnplaced)
	}
	fmt.Fprintln(tw, ")")
	fmt.Fprintf(tw, "  PDB violations\t%d\n", s.PDBViolations)
	fmt.Fprintf(tw, "  duplicate launches\t%d\n", s.DuplicateLaunches)
	fmt.Fprintf(tw, "  interruptions handled\t%d\n", s.InterruptionsHandled)
	fmt.Fprintf(tw, "  consolidation actions\t%d\n", s.ConsolidationActions)
	fmt.Fprintf(tw, "  unschedulable at the end\t%d\n", s.Unschedulable)
	tw.Flush()
	if len(r.Expect) > 0 {
		fmt.Fprintln(&b, "expectations:")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, e := range r.Expect {
			ok := "ok"
			if !e.OK {
				ok = "FAILED"
			}
			fmt.Fprintf(tw, "  %s\twant %s\tgot %v\t%s\n", e.Name, e.Want, e.Got, ok)
		}
		tw.Flush()
	}
	return b.String()
}
