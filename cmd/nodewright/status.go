package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nodewright/nodewright/shared/handover"
	"github.com/nodewright/nodewright/shared/state"
)

const statusUsage = `Usage: nodewright status (-stack NAME | -table TABLE -cluster CLUSTER) [flags]

Lists the NodeClaims Nodewright's state table holds for a cluster: NodePool,
instance type, zone, capacity type, price per hour, age, Node and phase
(launching, launched, registered, initialized, disrupting, terminating),
sorted by NodePool then name, and the NodeClaims and price per hour of each
NodePool and of the cluster, and the NodePools provisioning leaves out and
why (their EC2NodeClass is missing, or selects no subnet, security group or
AMI), as the provision function last found them. It reads the table only;
it changes nothing.
` + targetHelp + `
Examples:
  nodewright status -stack Nodewright-default -region us-east-1
  nodewright status -table nodewright-demo-state -cluster demo -o json
  nodewright status -endpoint-url http://127.0.0.1:PORT -region us-east-1 -table T -cluster C

Flags:
`

// statusFlags are `nodewright status`'s options.
type statusFlags struct {
	target targetFlags
	output string
}

func parseStatusFlags(args []string, stderr io.Writer) (*statusFlags, error) {
	sf := &statusFlags{}
	fs := flag.NewFlagSet("nodewright status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), statusUsage)
		fs.PrintDefaults()
	}
	sf.target.register(fs)
	fs.StringVar(&sf.output, "o", "table", "output `FORMAT`: table or json")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := checkOutput(sf.output); err != nil {
		return nil, err
	}
	return sf, sf.target.check()
}

func checkOutput(o string) error {
	if o != "table" && o != "json" {
		return fmt.Errorf("-o %q: want table or json", o)
	}
	return nil
}

// status runs `nodewright status`.
func (c cli) status(args []string, stdout, stderr io.Writer) int {
	sf, err := parseStatusFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright status: %v\n", err)
		return exitUsage
	}
	deps := c.stateDeps()
	ctx, cancel := context.WithTimeout(context.Background(), sf.target.timeout)
	defer cancel()
	st, t, err := deps.open(ctx, &sf.target)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright status: %v\n", err)
		return exitError
	}
	records, err := st.NodeClaims(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright status: %v (check -table, -region and your credentials' dynamodb:Query permission)\n", err)
		return exitError
	}
	readiness, err := st.PoolReadiness(ctx)
	if err != nil {
		// NodeClaims were read: show them, and say what is missing.
		fmt.Fprintf(stderr, "nodewright status: NodePool readiness not shown: %v (check your credentials' dynamodb:GetItem permission)\n", err)
	}
	rep := statusOf(t, records, readiness, deps.now())
	if sf.output == "json" {
		err = writeJSON(stdout, rep)
	} else {
		err = rep.write(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright status: %v\n", err)
		return exitError
	}
	return exitOK
}

// statusReport is what status prints (its JSON form with -o json).
type statusReport struct {
	Table      string       `json:"table"`
	Cluster    string       `json:"cluster"`
	NodeClaims []statusRow  `json:"nodeClaims"`
	NodePools  []poolTotals `json:"nodePools"`
	Total      poolTotals   `json:"total"`
	// NotReady are the NodePools provisioning leaves out, as of
	// ReadinessAt (the provision function's last change to them).
	NotReady    []state.NotReadyPool `json:"notReadyNodePools"`
	ReadinessAt *time.Time           `json:"readinessAt,omitempty"`
	// Karpenter is the Karpenter controller the provision function last
	// found running (namespace/holder of its Lease): it launches nothing.
	Karpenter string `json:"karpenterRunning,omitempty"`
}

type statusRow struct {
	Name         string      `json:"name"`
	NodePool     string      `json:"nodePool"`
	InstanceType string      `json:"instanceType,omitempty"`
	Zone         string      `json:"zone,omitempty"`
	CapacityType string      `json:"capacityType,omitempty"`
	PricePerHour float64     `json:"pricePerHour"`
	CreatedAt    time.Time   `json:"createdAt"`
	AgeSeconds   int64       `json:"ageSeconds"`
	Node         string      `json:"node,omitempty"`
	InstanceID   string      `json:"instanceId,omitempty"`
	Phase        state.Phase `json:"phase"`
	// Disruption is what is taking the node out (action: reason), if any.
	Disruption string `json:"disruption,omitempty"`
	// Drift is, for a drifted node, how it drifted (Karpenter's Drifted
	// condition reason: SubnetDrift, AMIDrift...).
	Drift string `json:"drift,omitempty"`
	// Adopted: the node was Karpenter's, adopted by a sweep.
	Adopted bool `json:"adoptedFromKarpenter,omitempty"`
}

type poolTotals struct {
	NodePool     string  `json:"nodePool,omitempty"`
	NodeClaims   int     `json:"nodeClaims"`
	PricePerHour float64 `json:"pricePerHour"`
}

// statusOf summarises the records at now, sorted by NodePool then name,
// with the pools the provision function leaves out, by name.
func statusOf(t target, records []*state.NodeClaim, readiness state.PoolReadiness, now time.Time) *statusReport {
	rep := &statusReport{Table: t.Table, Cluster: t.Cluster, NodeClaims: []statusRow{}, NodePools: []poolTotals{},
		NotReady: append([]state.NotReadyPool{}, readiness.NotReady...), Karpenter: readiness.Karpenter}
	sort.Slice(rep.NotReady, func(i, j int) bool { return rep.NotReady[i].NodePool < rep.NotReady[j].NodePool })
	if !readiness.At.IsZero() {
		at := readiness.At
		rep.ReadinessAt = &at
	}
	pools := map[string]*poolTotals{}
	for _, r := range records {
		row := rowOf(r, now)
		rep.NodeClaims = append(rep.NodeClaims, row)
		p := pools[r.NodePool]
		if p == nil {
			p = &poolTotals{NodePool: r.NodePool}
			pools[r.NodePool] = p
		}
		p.NodeClaims++
		p.PricePerHour += r.PricePerHour
		rep.Total.NodeClaims++
		rep.Total.PricePerHour += r.PricePerHour
	}
	sort.Slice(rep.NodeClaims, func(i, j int) bool {
		a, b := rep.NodeClaims[i], rep.NodeClaims[j]
		if a.NodePool != b.NodePool {
			return a.NodePool < b.NodePool
		}
		return a.Name < b.Name
	})
	for _, p := range pools {
		p.PricePerHour = round4(p.PricePerHour)
		rep.NodePools = append(rep.NodePools, *p)
	}
	sort.Slice(rep.NodePools, func(i, j int) bool { return rep.NodePools[i].NodePool < rep.NodePools[j].NodePool })
	rep.Total.PricePerHour = round4(rep.Total.PricePerHour)
	return rep
}

// rowOf is r's row at now.
func rowOf(r *state.NodeClaim, now time.Time) statusRow {
	row := statusRow{
		Name: r.Name, NodePool: r.NodePool, InstanceType: r.InstanceType, Zone: r.Zone, CapacityType: r.CapacityType,
		PricePerHour: r.PricePerHour, CreatedAt: r.CreatedAt, Node: r.NodeName, InstanceID: r.InstanceID, Phase: r.Phase,
	}
	if !r.CreatedAt.IsZero() && now.After(r.CreatedAt) {
		row.AgeSeconds = int64(now.Sub(r.CreatedAt) / time.Second)
	}
	row.Adopted = !r.AdoptedAt.IsZero()
	if d := r.Disruption; d != nil {
		row.Disruption = d.Action
		if d.Reason != "" {
			row.Disruption += ": " + d.Reason
		}
		if d.Drift != "" {
			row.Drift = d.Drift
			row.Disruption += ": " + d.Drift
		}
	}
	return row
}

func round4(v float64) float64 { return float64(int64(v*1e4+0.5)) / 1e4 }

// write prints the report as two aligned tables, and a third of the
// NodePools left out when there are any.
func (r *statusReport) write(w io.Writer) error {
	fmt.Fprintf(w, "cluster %s (table %s)\n\n", r.Cluster, r.Table)
	if r.Karpenter != "" {
		ns, holder, _ := strings.Cut(r.Karpenter, "/")
		fmt.Fprintf(w, "Karpenter's controller is running (Lease %s/%s, holder %s): Nodewright launches and adopts nothing until it is gone\n\n",
			ns, handover.LeaseName, holder)
	}
	if len(r.NodeClaims) == 0 {
		fmt.Fprintln(w, "no NodeClaims: Nodewright has launched no node for this cluster (or they are all gone)")
		return r.writeNotReady(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODECLAIM\tNODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY\tPRICE/H\tAGE\tNODE\tPHASE")
	for _, n := range r.NodeClaims {
		phase := string(n.Phase)
		if n.Adopted {
			phase += ", adopted from Karpenter"
		}
		if n.Disruption != "" {
			phase += " (" + n.Disruption + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.NodePool, dash(n.InstanceType), dash(n.Zone),
			dash(n.CapacityType), price(n.PricePerHour), age(time.Duration(n.AgeSeconds)*time.Second), dash(n.Node), phase)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NODEPOOL\tNODECLAIMS\tPRICE/H")
	for _, p := range r.NodePools {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", p.NodePool, p.NodeClaims, price(p.PricePerHour))
	}
	fmt.Fprintf(tw, "%s\t%d\t%s\n", "(all)", r.Total.NodeClaims, price(r.Total.PricePerHour))
	if err := tw.Flush(); err != nil {
		return err
	}
	return r.writeNotReady(w)
}

// writeNotReady prints the NodePools provisioning leaves out, if any.
func (r *statusReport) writeNotReady(w io.Writer) error {
	if len(r.NotReady) == 0 {
		return nil
	}
	since := ""
	if r.ReadinessAt != nil {
		since = " (found " + r.ReadinessAt.UTC().Format(time.RFC3339) + ")"
	}
	fmt.Fprintf(w, "\nNodePools not ready, left out of provisioning until fixed%s:\n", since)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODEPOOL\tNODECLASS\tREASON\tMESSAGE")
	for _, p := range r.NotReady {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.NodePool, dash(p.NodeClass), p.Reason, p.Message)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func price(p float64) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.4f", p)
}

// age is a duration as kubectl shows ages: 45s, 12m, 5h, 3d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// pluralize returns "1 word" or "n words".
func pluralize(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
