package run

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/provision"
)

// Progress prints progress lines stamped with the time since it began.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	begin time.Time
}

// NewProgress starts the clock.
func NewProgress(w io.Writer, now func() time.Time) *Progress {
	return &Progress{w: w, now: now, begin: now()}
}

// Printf prints one line: "[  12.3s] message".
func (p *Progress) Printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%6.1fs] %s\n", p.now().Sub(p.begin).Seconds(), fmt.Sprintf(format, args...))
}

// Block prints lines as they are, indented.
func (p *Progress) Block(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(p.w, "          %s\n", l)
	}
}

// printPass prints what the pass read, planned and launched.
func printPass(p *Progress, rep *provision.Report) {
	p.Printf("provisioning pass: read %d pending pods, %d nodes, zones %s in %s; solved in %s; launched in %s",
		rep.Pending, rep.Nodes, strings.Join(rep.Zones, ","), round(rep.Read), round(rep.Solve), round(rep.Launch))
	for _, w := range rep.Warnings {
		p.Printf("warning: %s", w)
	}
	if rep.Plan == nil {
		return
	}
	p.Block(planTable(rep))
}

// planTable lists each NodeClaim: what it was planned as and what EC2
// launched for it.
func planTable(rep *provision.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan: %d NodeClaims for %d pods, $%.4f/h (lower bound $%.4f/h)\n",
		len(rep.Plan.NodeClaims), rep.Pending, rep.Plan.PricePerHour, rep.Plan.LowerBoundPricePerHour)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODECLAIM\tPODS\tPLANNED\tOPTIONS\tLAUNCHED\tZONE\tCAPACITY\t$/H\tINSTANCE")
	for _, l := range rep.Launches {
		c := l.Claim
		planned := fmt.Sprintf("%s %s $%.4f", first(c.InstanceTypes), c.CapacityType, c.PricePerHour)
		options := fmt.Sprintf("%d types x %d zones, %s", len(c.InstanceTypes), len(c.Zones), strings.Join(c.CapacityTypes, "/"))
		if l.Instance == nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\tFAILED: %s\t\t\t\t\n", l.NodeClaim, len(c.Pods), planned, options, l.Error)
			continue
		}
		in := l.Instance
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.4f\t%s\n", l.NodeClaim, len(c.Pods), planned, options,
			in.InstanceType, in.Zone, in.CapacityType, in.PricePerHour, in.InstanceID)
	}
	tw.Flush()
	return b.String()
}

func first(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	return ss[0]
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d
}

// Summary is the closing report: pods, nodes (type, zone, capacity type,
// price), the price launched against the plan, and the phases.
func Summary(res *Result, extra []Phase) string {
	var b strings.Builder
	rep := res.Report
	byInstance := map[string]*fleet.Instance{}
	for _, in := range rep.Launched() {
		byInstance[in.InstanceID] = in
	}
	podsOn := map[string]int{}
	for _, p := range res.Pods {
		if p.Status.Phase == corev1.PodRunning {
			podsOn[p.Spec.NodeName]++
		}
	}
	fmt.Fprintf(&b, "summary: %d inflate pods Running on %d nodes\n", len(res.Pods), len(res.Nodes))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tNODEPOOL\tTYPE\tZONE\tCAPACITY\t$/H\tPODS")
	for _, n := range res.Nodes {
		in := byInstance[InstanceID(n.Spec.ProviderID)]
		price := 0.0
		if in != nil {
			price = in.PricePerHour
		}
		l := n.Labels
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%.4f\t%d\n", n.Name, l[apis.LabelNodePool], l[apis.LabelInstanceType], l[apis.LabelZone],
			l[apis.LabelCapacityType], price, podsOn[n.Name])
	}
	tw.Flush()
	fmt.Fprintf(&b, "price: $%.4f/h launched; plan $%.4f/h; lower bound $%.4f/h\n", rep.PricePerHour(), rep.Plan.PricePerHour, rep.Plan.LowerBoundPricePerHour)
	phases := append(append([]Phase(nil), extra...), res.Phases...)
	var total time.Duration
	parts := make([]string, 0, len(phases))
	for _, ph := range phases {
		parts = append(parts, fmt.Sprintf("%s %s", ph.Name, round(ph.Duration)))
		total += ph.Duration
	}
	fmt.Fprintf(&b, "phases: %s; total %s\n", strings.Join(parts, ", "), round(total))
	fmt.Fprintf(&b, "  provisioning pass: read %s, solve %s, launch %s\n", round(rep.Read), round(rep.Solve), round(rep.Launch))
	return b.String()
}
