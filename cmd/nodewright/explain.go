package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nodewright/nodewright/shared/state"
)

const explainUsage = `Usage: nodewright explain POD (-stack NAME | -table TABLE -cluster CLUSTER) [flags]

Says why a pod is pending or where Nodewright placed it, from the decisions
the functions recorded in the state table (kept for 7 days): the latest
provisioning round that named the pod (the NodeClaim launched for it, with
the instance type, zone, capacity type and price it launched as and the
cheapest options it was chosen from; the existing or launching node it fits
on; or the reason nothing can take it), what has happened to that NodeClaim
since (its phase and Node now, consolidation actions with the price per
hour before and after, an interruption's replacement), and earlier
decisions about the pod.

POD is namespace/name (a bare name means namespace default). Rounds record a
decision only when they launch capacity or leave pods pending: a pod that
kube-scheduler placed on free capacity by itself has none. The exit code is
1 when no decision names the pod.
` + targetHelp + `
Examples:
  nodewright explain default/inflate-7d9c4-abcde -stack Nodewright-default
  nodewright explain web-0 -table nodewright-demo-state -cluster demo -since 2h -o json

Flags:
`

// explainFlags are `nodewright explain`'s options.
type explainFlags struct {
	target  targetFlags
	pod     string
	since   time.Duration
	history int
	output  string
}

func parseExplainFlags(args []string, stderr io.Writer) (*explainFlags, error) {
	ef := &explainFlags{}
	fs := flag.NewFlagSet("nodewright explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), explainUsage)
		fs.PrintDefaults()
	}
	ef.target.register(fs)
	fs.DurationVar(&ef.since, "since", 24*time.Hour, "read the decisions of this long ago onwards (at most 168h, their retention)")
	fs.IntVar(&ef.history, "history", 5, "earlier decisions about the pod to show at most")
	fs.StringVar(&ef.output, "o", "text", "output `FORMAT`: text or json")
	// The pod may come before or after the flags.
	var pods []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pods = append(pods, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch len(pods) {
	case 0:
		return nil, errors.New("which pod? give it as namespace/name")
	case 1:
	default:
		return nil, fmt.Errorf("want one pod, got %d: %s", len(pods), strings.Join(pods, " "))
	}
	pod, err := podKey(pods[0])
	if err != nil {
		return nil, err
	}
	ef.pod = pod
	if ef.output != "text" && ef.output != "json" {
		return nil, fmt.Errorf("-o %q: want text or json", ef.output)
	}
	if ef.since <= 0 || ef.since > state.DecisionRetention {
		return nil, fmt.Errorf("-since %s: want more than 0 and at most %s (decisions are kept for 7 days)", ef.since, state.DecisionRetention)
	}
	if ef.history < 0 {
		return nil, fmt.Errorf("-history %d: must not be negative", ef.history)
	}
	return ef, ef.target.check()
}

// podKey is the pod's namespace/name as decisions name it.
func podKey(arg string) (string, error) {
	ns, name, ok := strings.Cut(arg, "/")
	if !ok {
		ns, name = "default", arg
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("pod %q: want namespace/name (or a name in namespace default)", arg)
	}
	return ns + "/" + name, nil
}

// explain runs `nodewright explain`.
func (c cli) explain(args []string, stdout, stderr io.Writer) int {
	ef, err := parseExplainFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright explain: %v\n", err)
		return exitUsage
	}
	deps := c.stateDeps()
	ctx, cancel := context.WithTimeout(context.Background(), ef.target.timeout)
	defer cancel()
	st, t, err := deps.open(ctx, &ef.target)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright explain: %v\n", err)
		return exitError
	}
	now := deps.now()
	decisions, err := st.Decisions(ctx, now.Add(-ef.since), 0)
	if err == nil {
		var records []*state.NodeClaim
		if records, err = st.NodeClaims(ctx); err == nil {
			ex := explainPod(ef.pod, t, decisions, records, ef.history, now)
			ex.Since = now.Add(-ef.since).UTC()
			if ef.output == "json" {
				err = writeJSON(stdout, ex)
			} else {
				err = ex.write(stdout, now)
			}
			if err == nil && !ex.Found {
				fmt.Fprintf(stderr, "nodewright explain: no decision names pod %s since %s: check the namespace and -cluster, widen -since, or the pod was placed without Nodewright launching anything\n",
					ef.pod, ex.Since.Format(time.RFC3339))
				return exitError
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright explain: %v (check -table, -region and your credentials' dynamodb:Query permission)\n", err)
		return exitError
	}
	return exitOK
}

// explanation is what explain prints (its JSON form with -o json).
type explanation struct {
	Pod     string    `json:"pod"`
	Cluster string    `json:"cluster"`
	Table   string    `json:"table"`
	Since   time.Time `json:"since"`
	Found   bool      `json:"found"`
	// Latest is the newest decision that names the pod.
	Latest *podDecision `json:"latest,omitempty"`
	// NodeClaim is the record, now, of the NodeClaim Latest gave the pod
	// (nil: none, or it is gone).
	NodeClaim *statusRow `json:"nodeClaim,omitempty"`
	// Later are the disruption decisions about that NodeClaim since,
	// oldest first.
	Later []state.Decision `json:"later,omitempty"`
	// Earlier are older decisions about the pod, newest first.
	Earlier []podDecision `json:"earlier,omitempty"`
	// Incomplete counts decisions that left some pods out (too many to
	// record): the pod may be among them.
	Incomplete int `json:"incomplete,omitempty"`
}

// podDecision is one decision as it concerns the pod.
type podDecision struct {
	Time     time.Time `json:"time"`
	Function string    `json:"function"`
	Kind     string    `json:"kind"`
	// Outcome is what the decision gave the pod (see state.Decision.Pods).
	Outcome string `json:"outcome"`
	// NodeClaimName is the NodeClaim the pod was given or waits for.
	NodeClaimName string `json:"nodeClaimName,omitempty"`
	// NodeClaim is that NodeClaim as decided (with its options), when the
	// decision launched it.
	NodeClaim *state.DecidedNodeClaim `json:"nodeClaim,omitempty"`
	Summary   string                  `json:"summary"`
}

// explainPod assembles the explanation from decisions (newest first) and
// the current records.
func explainPod(pod string, t target, decisions []state.Decision, records []*state.NodeClaim, history int, now time.Time) *explanation {
	ex := &explanation{Pod: pod, Cluster: t.Cluster, Table: t.Table}
	var actions []state.Decision
	for i := range decisions {
		d := &decisions[i]
		if d.Action != nil || replacedNodeClaim(d) != "" {
			actions = append(actions, *d)
		}
		outcome, ok := d.Pods[pod]
		if !ok {
			if d.PodsOmitted > 0 {
				ex.Incomplete++
			}
			continue
		}
		pd := podDecision{Time: d.Time, Function: d.Function, Kind: d.Kind, Outcome: outcome, Summary: d.Summary, NodeClaimName: nodeClaimName(outcome)}
		if nc, ok := d.NodeClaimOf(pod); ok {
			c := *nc
			pd.NodeClaim = &c
		}
		if ex.Latest == nil {
			ex.Latest = &pd
			continue
		}
		if len(ex.Earlier) < history {
			ex.Earlier = append(ex.Earlier, pd)
		}
	}
	ex.Found = ex.Latest != nil
	if !ex.Found || ex.Latest.NodeClaimName == "" {
		return ex
	}
	name := ex.Latest.NodeClaimName
	for _, r := range records {
		if r.Name == name {
			row := rowOf(r, now)
			ex.NodeClaim = &row
		}
	}
	for _, d := range actions {
		if d.Time.Before(ex.Latest.Time) {
			continue
		}
		if a := d.Action; (a != nil && (slices.Contains(a.NodeClaims, name) || slices.Contains(a.Replacements, name))) || replacedNodeClaim(&d) == name {
			ex.Later = append(ex.Later, d)
		}
	}
	sort.SliceStable(ex.Later, func(i, j int) bool { return ex.Later[i].Time.Before(ex.Later[j].Time) })
	return ex
}

// replacedNodeClaim is the NodeClaim whose pods a replacement decision
// (an interruption's, reason "replacement for NAME: ...") moved, or "".
func replacedNodeClaim(d *state.Decision) string {
	if d.Kind != "replacement" {
		return ""
	}
	rest, ok := strings.CutPrefix(d.Summary, "replacement for ")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, ": ")
	if !ok || strings.ContainsAny(name, " ,") {
		return ""
	}
	return name
}

// nodeClaimName is the NodeClaim an outcome names ("nodeclaim NAME ...",
// "in-flight nodeclaim NAME"), or "".
func nodeClaimName(outcome string) string {
	rest, ok := strings.CutPrefix(outcome, "in-flight nodeclaim ")
	if !ok {
		if rest, ok = strings.CutPrefix(outcome, "nodeclaim "); !ok {
			return ""
		}
	}
	name, _, _ := strings.Cut(rest, " ")
	return name
}

// headline is one line on what a decision did with the pod.
func (pd *podDecision) headline() string {
	o := pd.Outcome
	switch {
	case strings.HasPrefix(o, "pending: "):
		return "left pending: " + strings.TrimPrefix(o, "pending: ")
	case strings.HasPrefix(o, "node "):
		return "fits on the existing node " + strings.TrimPrefix(o, "node ") + " (nothing launched; kube-scheduler binds it)"
	case strings.HasPrefix(o, "in-flight nodeclaim "):
		return "waits for NodeClaim " + pd.NodeClaimName + ", launched earlier and not registered yet"
	case strings.Contains(o, " failed to launch: "):
		_, why, _ := strings.Cut(o, " failed to launch: ")
		return "NodeClaim " + pd.NodeClaimName + " was planned for it but failed to launch: " + why
	case pd.NodeClaimName != "":
		return "placed on the new NodeClaim " + pd.NodeClaimName
	}
	return o
}

func stamp(t, now time.Time) string {
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), age(now.Sub(t)))
}

// write prints the explanation for a person.
func (ex *explanation) write(w io.Writer, now time.Time) error {
	fmt.Fprintf(w, "pod %s, cluster %s\n", ex.Pod, ex.Cluster)
	if !ex.Found {
		fmt.Fprintf(w, "\nno decision names the pod since %s.\n", ex.Since.Format(time.RFC3339))
		if ex.Incomplete > 0 {
			fmt.Fprintf(w, "%d decisions left some pods out (too many to record): the pod may be among them.\n", ex.Incomplete)
		}
		return nil
	}
	l := ex.Latest
	fmt.Fprintf(w, "\n%s, %s %s:\n  %s\n", stamp(l.Time, now), l.Function, l.Kind, l.headline())
	if nc := l.NodeClaim; nc != nil {
		if nc.InstanceType != "" {
			fmt.Fprintf(w, "  NodeClaim %s (NodePool %s, %s) launched as %s, %s, %s at %s/h\n", nc.Name, nc.NodePool,
				pluralize(nc.Pods, "pod"), nc.InstanceType, nc.CapacityType, nc.Zone, price(nc.PricePerHour))
		}
		if len(nc.Options) > 0 {
			fmt.Fprintf(w, "  chosen from %d instance types; the cheapest:\n", max(nc.OptionsTotal, len(nc.Options)))
			var table bytes.Buffer
			tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "    INSTANCE TYPE\tCAPACITY\tPRICE/H\t")
			for _, o := range nc.Options {
				mark := ""
				if o.InstanceType == nc.InstanceType {
					mark = "<- launched"
				}
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", o.InstanceType, dash(o.CapacityType), price(o.PricePerHour), mark)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, line := range strings.SplitAfter(table.String(), "\n") {
				if line != "" {
					fmt.Fprintln(w, strings.TrimRight(line, " \n"))
				}
			}
			if more := nc.OptionsTotal - len(nc.Options); more > 0 {
				fmt.Fprintf(w, "    and %d more\n", more)
			}
		}
	}
	fmt.Fprintf(w, "  the round: %s\n", l.Summary)
	if l.NodeClaimName != "" {
		if r := ex.NodeClaim; r != nil {
			fmt.Fprintf(w, "\nNodeClaim %s now: %s", r.Name, r.Phase)
			if r.Node != "" {
				fmt.Fprintf(w, ", Node %s", r.Node)
			}
			if r.InstanceType != "" {
				fmt.Fprintf(w, ", %s %s in %s at %s/h", r.InstanceType, r.CapacityType, r.Zone, price(r.PricePerHour))
			}
			if r.Disruption != "" {
				fmt.Fprintf(w, ", being disrupted (%s)", r.Disruption)
			}
			fmt.Fprintln(w)
		} else {
			fmt.Fprintf(w, "\nNodeClaim %s is no longer in the state table: its node is gone, or it never launched\n", l.NodeClaimName)
		}
	}
	if len(ex.Later) > 0 {
		fmt.Fprintln(w, "\nsince then:")
		for _, d := range ex.Later {
			fmt.Fprintf(w, "  %s %s\n", stamp(d.Time, now), d.Summary)
		}
	}
	if len(ex.Earlier) > 0 {
		fmt.Fprintln(w, "\nearlier decisions about the pod:")
		for _, pd := range ex.Earlier {
			fmt.Fprintf(w, "  %s %s\n", stamp(pd.Time, now), pd.headline())
		}
	}
	return nil
}
