package disruption

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodewright/nodewright/shared/apis"
)

// MethodRepair replaces nodes that have been unhealthy for longer than
// their repair toleration.
const MethodRepair Method = "repair"

// RepairUnhealthyShare is the safety stop: repair pauses for a NodePool
// while more than this share of its nodes is unhealthy, rounded up as a
// PodDisruptionBudget's maxUnavailable is (Karpenter's
// allowedUnhealthyPercent): 1 unhealthy node is allowed in pools of 1 to
// 5 nodes, 2 in pools of 6 to 10.
var RepairUnhealthyShare = intstr.FromString("20%")

// repair replaces unhealthy nodes as Karpenter v1.14.1's node repair
// (controllers/node/health) does: a node one of whose repair policies
// (apis.DefaultRepairPolicies, with its NodePool's tolerations) has held
// past its toleration, counted from the condition's lastTransitionTime,
// is deleted at once: nothing blocks it (no do-not-disrupt, PDB or
// disruption budget: Karpenter's repair consults none), its pods are
// deleted without waiting for evictions (Command.Immediate) and wait for
// the provision function like any pending pod. It takes a node that
// registered and never initialized too (its kubelet never became Ready),
// as Karpenter's repair takes any NodeClaim with a Node. It counts against the
// budgets of the methods after it. Only Nodewright's opt-outs hold it: the
// NodePool's and the Node's nodewright.io/node-repair "false", and the
// safety stop (RepairUnhealthyShare).
type repair struct{}

func (repair) kind() kind { return kind{name: MethodRepair, class: unhealthy} }

func (repair) candidate(d *decider, n *nodeInfo) (bool, string) {
	f, why := d.v.repairable(n)
	if f == nil {
		if why != "" {
			// An unhealthy node repair leaves alone: say why, whatever
			// method takes it.
			if d.rep.RepairHeld == nil {
				d.rep.RepairHeld = map[string]string{}
			}
			d.rep.RepairHeld[n.name()] = why
		}
		return false, why
	}
	d.detail[n] = f.String()
	return true, ""
}

// compute deletes each candidate, the longest overdue first, one command
// per node; their pods wait for the provision function.
func (repair) compute(d *decider, cands []*nodeInfo) []Command {
	due := map[*nodeInfo]time.Time{}
	for _, n := range cands {
		f, _ := d.v.repairable(n)
		due[n] = f.due()
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := due[cands[i]], due[cands[j]]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return cands[i].name() < cands[j].name()
	})
	var cmds []Command
	for _, n := range cands {
		// A node being repaired is no place for another's pods.
		d.sim.avoid[n.name()] = true
	}
	for _, n := range cands {
		f, _ := d.v.repairable(n)
		cmd := d.command(MethodRepair, ReasonUnhealthy, []*nodeInfo{n}, nil, d.detail[n]+"; its pods wait for the provision function")
		cmd.Immediate, cmd.Condition = true, f.condition
		cmds = append(cmds, cmd)
		d.budgets.take(n.pool.Name)
	}
	return cmds
}

func (repair) still(v *view, n *nodeInfo, _ map[string]bool) error {
	if f, why := v.repairable(n); f == nil {
		if why == "" {
			why = "healthy again"
		}
		return invalid(CauseChanged, "node %s: no longer to be repaired: %s", n.name(), why)
	}
	return nil
}

// holds: an unhealthy node goes whether or not its pods find a place.
func (repair) holds(*sim, Command, []*nodeInfo) error { return nil }

// finding is one repair policy a node's state breaks now.
type finding struct {
	condition corev1.NodeConditionType
	status    string
	since     time.Time
	tol       time.Duration
	detail    string
}

// due is when the toleration ends.
func (f finding) due() time.Time { return f.since.Add(f.tol) }

func (f finding) String() string {
	what := fmt.Sprintf("%s %s", f.condition, f.status)
	if f.detail != "" {
		what += " (" + f.detail + ")"
	}
	return fmt.Sprintf("unhealthy: %s since %s, past its %s toleration", what, f.since.UTC().Format(time.RFC3339), f.tol)
}

// findings are the policies a node's conditions and EC2 status checks
// break now, whatever their tolerations, the earliest due first (then by
// condition). A condition without a lastTransitionTime breaks none: when
// it began is not known. Pure.
func findings(node *corev1.Node, check *StatusCheck, policies []apis.RepairPolicy) []finding {
	var out []finding
	for _, p := range policies {
		if p.Condition == apis.ConditionEC2StatusCheck {
			if check != nil && check.Impaired && !check.Since.IsZero() {
				out = append(out, finding{condition: p.Condition, status: "failing", since: check.Since, tol: p.Toleration, detail: check.Detail})
			}
			continue
		}
		for _, c := range node.Status.Conditions {
			if c.Type == p.Condition && p.Bad(c.Status) && !c.LastTransitionTime.IsZero() {
				out = append(out, finding{condition: c.Type, status: string(c.Status), since: c.LastTransitionTime.Time, tol: p.Toleration, detail: c.Reason})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].due().Equal(out[j].due()) {
			return out[i].due().Before(out[j].due())
		}
		return out[i].condition < out[j].condition
	})
	return out
}

// poolHealth is a NodePool's repair settings and how many of its nodes are
// unhealthy.
type poolHealth struct {
	settings  apis.NodeRepair
	err       error
	nodes     int
	unhealthy int
	// allowed is how many unhealthy nodes the safety stop allows.
	allowed int
	// held says why the safety stop held a node that was due (Report.RepairPaused).
	held string
}

// paused says why the safety stop holds the pool's repairs ("" when it
// does not).
func (h *poolHealth) paused(pool string) string {
	if h.unhealthy <= h.allowed {
		return ""
	}
	return fmt.Sprintf("node repair paused for NodePool %s: %d of its %d nodes are unhealthy, more than %s (%d allowed): replacing them would not fix what ails them all",
		pool, h.unhealthy, h.nodes, RepairUnhealthyShare.String(), h.allowed)
}

// Allowed is how many unhealthy nodes the safety stop allows in a pool of
// n nodes (RepairUnhealthyShare of n, rounded up).
func Allowed(n int) int {
	a, err := intstr.GetScaledValueFromIntOrPercent(&RepairUnhealthyShare, n, true)
	if err != nil {
		return 0
	}
	return a
}

// poolHealth reads a pool's settings and counts its nodes (those
// Nodewright launched into it, whatever their phase) and its unhealthy
// ones (breaking a policy now, tolerated or not, opted out or not), once.
func (v *view) poolHealth(pool *apis.NodePool) *poolHealth {
	if h, ok := v.health[pool.Name]; ok {
		return h
	}
	h := &poolHealth{}
	h.settings, h.err = pool.NodeRepair()
	if h.err != nil {
		v.warn("%v: no node repair until it is fixed", h.err)
	}
	for _, n := range v.nodes {
		if n.rec == nil || n.rec.NodePool != pool.Name {
			continue
		}
		h.nodes++
		if len(findings(n.node, v.statusCheck(n), h.settings.Policies)) > 0 {
			h.unhealthy++
		}
	}
	h.allowed = Allowed(h.nodes)
	v.health[pool.Name] = h
	return h
}

// statusCheck is the node's instance's EC2 status check (nil: passing or
// not polled).
func (v *view) statusCheck(n *nodeInfo) *StatusCheck {
	if n.rec == nil || v.in.StatusChecks == nil {
		return nil
	}
	c, ok := v.in.StatusChecks[n.rec.InstanceID]
	if !ok {
		return nil
	}
	return &c
}

// repairable is the finding a node is to be repaired for now, or why it
// is not ("" when it is healthy or repair does not apply to it).
func (v *view) repairable(n *nodeInfo) (*finding, string) {
	h := v.poolHealth(n.pool)
	fs := findings(n.node, v.statusCheck(n), h.settings.Policies)
	if len(fs) == 0 {
		return nil, ""
	}
	f := fs[0]
	switch {
	case h.err != nil:
		return nil, fmt.Sprintf("%s, but node repair is off: %v", f.condition, h.err)
	case !h.settings.Enabled:
		return nil, fmt.Sprintf("%s %s, but NodePool %s is annotated %s=false", f.condition, f.status, n.pool.Name, apis.AnnotationNodeRepair)
	case apis.NodeRepairOptOut(n.node.Annotations):
		return nil, fmt.Sprintf("%s %s, but the node is annotated %s=false", f.condition, f.status, apis.AnnotationNodeRepair)
	case v.now.Before(f.due()):
		return nil, fmt.Sprintf("%s %s for %s, repaired after %s", f.condition, f.status, v.now.Sub(f.since).Round(time.Second), f.tol)
	}
	if why := h.paused(n.pool.Name); why != "" {
		h.held = why
		return nil, why
	}
	return &f, ""
}
