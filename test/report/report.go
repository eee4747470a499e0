// Package report is what a played scenario leaves behind: its timeline,
// samples of the cluster over time, the summary figures computed from
// them, the scenario's expectations checked against them, and the two
// files `make run` writes (report.json for machines, report.html for
// people). Everything here is pure: the player (package player) observes
// the local cloud and hands the observations over as plain values.
package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nodewright/nodewright/test/scenario"
)

// Timeline event kinds.
const (
	KindStep          = "step"          // a scenario step began
	KindTrigger       = "trigger"       // the provision function was invoked by a hint
	KindPods          = "pods"          // pods pending / Running changed
	KindLaunch        = "launch"        // a NodeClaim's instance launched
	KindNode          = "node"          // a node registered
	KindTerminate     = "terminate"     // a NodeClaim's instance went
	KindInterruption  = "interruption"  // an interruption was delivered or handled
	KindConsolidation = "consolidation" // consolidation acted
	KindCapacity      = "capacity"      // capacity pools exhausted or restored
	KindWarning       = "warning"       // something the scenario should know
)

// Event is one line of the timeline.
type Event struct {
	// Time is seconds since the scenario began.
	Time   float64 `json:"time"`
	Kind   string  `json:"kind"`
	Object string  `json:"object"`
	Detail string  `json:"detail"`
}

// Sample is the cluster at one moment, for the charts.
type Sample struct {
	Time          float64 `json:"time"`
	PodsPending   int     `json:"podsPending"`
	PodsRunning   int     `json:"podsRunning"`
	NodesSpot     int     `json:"nodesSpot"`
	NodesOnDemand int     `json:"nodesOnDemand"`
	PricePerHour  float64 `json:"pricePerHour"`
}

// Summary are the scenario's figures (report.json's summary).
type Summary struct {
	PodsToRunningP50Seconds float64 `json:"podsToRunningP50Seconds"`
	PodsToRunningP99Seconds float64 `json:"podsToRunningP99Seconds"`
	// PodsMeasured is how many pods went from created to Running.
	PodsMeasured     int     `json:"podsMeasured"`
	NodesLaunched    int     `json:"nodesLaunched"`
	NodesAtEnd       int     `json:"nodesAtEnd"`
	PricePerHourPeak float64 `json:"pricePerHourPeak"`
	PricePerHourEnd  float64 `json:"pricePerHourEnd"`
	// PDBViolations counts the times a PodDisruptionBudget's pods were
	// more unavailable than it allows, once they had all been available.
	PDBViolations int `json:"pdbViolations"`
	// DuplicateLaunches: see Duplicates.
	DuplicateLaunches    int `json:"duplicateLaunches"`
	InterruptionsHandled int `json:"interruptionsHandled"`
	ConsolidationActions int `json:"consolidationActions"`
	// Unschedulable are pods Pending at the end that kube-scheduler found
	// no node for.
	Unschedulable int `json:"unschedulable"`
	// FixedNodeGroup*: the peak's pods packed onto one node group of
	// m5.xlarge on-demand nodes (what Cluster Autoscaler would have used);
	// Unplaced are pods such a node cannot run (GPUs, say).
	FixedNodeGroupPricePerHourPeak float64 `json:"fixedNodeGroupPricePerHourPeak"`
	FixedNodeGroupNodesPeak        int     `json:"fixedNodeGroupNodesPeak"`
	FixedNodeGroupUnplaced         int     `json:"fixedNodeGroupUnplaced"`
}

// Expectation is one of the scenario's expect entries, checked.
type Expectation struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  any    `json:"got"`
	OK   bool   `json:"ok"`
}

// Report is report.json.
type Report struct {
	Scenario string    `json:"scenario"`
	File     string    `json:"file"`
	Started  time.Time `json:"started"`
	// Seconds is how long the scenario played.
	Seconds  float64       `json:"seconds"`
	Passed   bool          `json:"passed"`
	Error    string        `json:"error,omitempty"`
	Expect   []Expectation `json:"expect"`
	Summary  Summary       `json:"summary"`
	Timeline []Event       `json:"timeline"`
	Samples  []Sample      `json:"samples"`
	// Nodes are every node the scenario launched.
	Nodes []Node `json:"nodes"`
	// NodeClaims are the cluster's NodeClaim objects at the end, as
	// `kubectl get nodeclaims` lists them.
	NodeClaims []NodeClaim `json:"nodeClaims"`
}

// NodeClaim is one NodeClaim object: kubectl's columns and its NodePool.
type NodeClaim struct {
	Name         string `json:"name"`
	NodePool     string `json:"nodePool"`
	InstanceType string `json:"type"`
	CapacityType string `json:"capacity"`
	Zone         string `json:"zone"`
	Node         string `json:"node"`
	Ready        string `json:"ready"`
}

// Node is one launched NodeClaim and its instance.
type Node struct {
	NodeClaim    string  `json:"nodeClaim"`
	NodePool     string  `json:"nodePool"`
	InstanceID   string  `json:"instanceId"`
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	PricePerHour float64 `json:"pricePerHour"`
	Reason       string  `json:"reason"`
	Launched     float64 `json:"launched"`
	// Gone is when it went (0: it runs at the end).
	Gone float64 `json:"gone,omitempty"`
	// Pods is how many pods were ever bound to its node.
	Pods int `json:"pods"`
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of xs
// (0 when empty).
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Launch is what Duplicates needs to know of one launched NodeClaim.
type Launch struct {
	NodeClaim string
	// Instances are the EC2 instances tagged with the NodeClaim's name.
	Instances []string
	// Registered: its node joined the cluster (or it was still booting
	// at the end: Settled false).
	Registered bool
	Settled    bool
	// Pods is how many pods were ever bound to its node.
	Pods int
	// Static: launched for a static NodePool (spec.replicas), for no pod.
	Static bool
}

// Duplicates counts duplicate launches, defined as: (1) every instance
// beyond the first that carries one NodeClaim's tag (the same NodeClaim
// launched twice, which the fleet's ClientToken must prevent), plus (2)
// every NodeClaim launched beyond what pending pods needed: one whose
// node registered and was never bound a single pod before it went or the
// scenario ended. A NodeClaim whose instance never registered (still
// booting at the end, or terminated before it joined) is not counted by
// (2): nothing could have run on it; nor is a static NodePool's, launched
// for no pod.
func Duplicates(launches []Launch) int {
	n := 0
	for _, l := range launches {
		if len(l.Instances) > 1 {
			n += len(l.Instances) - 1
		}
		if l.Registered && l.Settled && l.Pods == 0 && !l.Static {
			n++
		}
	}
	return n
}

// Facts are the end state the expectations are checked against, beyond
// the summary.
type Facts struct {
	// PodsRunning counts the Running pods of podsRunningAtEnd's selector.
	PodsRunning int
	// NodesAtEnd counts the nodes nodesAtEnd's filter matches.
	NodesAtEnd int
	// PodsEvicted counts the evicted pods of podsEvicted's selector.
	PodsEvicted int
	// Launched counts, for each of launched's entries, the launched
	// NodeClaims it matches.
	Launched []int
}

// Check evaluates the scenario's expectations, in a fixed order.
func Check(e scenario.Expect, s Summary, f Facts) []Expectation {
	var out []Expectation
	add := func(name string, r *scenario.Range, got float64, want string) {
		if r == nil {
			return
		}
		if want == "" {
			want = r.String()
		}
		var g any = got
		if got == math.Trunc(got) {
			g = int64(got)
		}
		out = append(out, Expectation{Name: name, Want: want, Got: g, OK: r.Holds(got)})
	}
	add("pdbViolations", e.PDBViolations, float64(s.PDBViolations), "")
	add("duplicateLaunches", e.DuplicateLaunches, float64(s.DuplicateLaunches), "")
	add("unschedulable", e.Unschedulable, float64(s.Unschedulable), "")
	add("interruptionsHandled", e.InterruptionsHandled, float64(s.InterruptionsHandled), "")
	add("consolidationActions", e.ConsolidationActions, float64(s.ConsolidationActions), "")
	add("nodesLaunched", e.NodesLaunched, float64(s.NodesLaunched), "")
	if p := e.PodsRunningAtEnd; p != nil {
		add("podsRunningAtEnd", &p.Range, float64(f.PodsRunning), p.Selector+" "+p.Range.String())
	}
	if p := e.PodsEvicted; p != nil {
		add("podsEvicted", &p.Range, float64(f.PodsEvicted), p.Selector+" "+p.Range.String())
	}
	if e.PricePerHourAtEnd != nil {
		add("pricePerHourAtEnd", e.PricePerHourAtEnd, math.Round(s.PricePerHourEnd*1e4)/1e4, "")
	}
	if n := e.NodesAtEnd; n != nil {
		add("nodesAtEnd", &n.Range, float64(f.NodesAtEnd), n.String())
	}
	for i := range e.Launched {
		got := 0
		if i < len(f.Launched) {
			got = f.Launched[i]
		}
		add("launched", &e.Launched[i].Range, float64(got), e.Launched[i].String())
	}
	return out
}

// Passed reports whether every expectation holds.
func Passed(es []Expectation) bool {
	for _, e := range es {
		if !e.OK {
			return false
		}
	}
	return true
}

// Write writes report.json and report.html into dir (created if needed)
// and returns their paths.
func (r *Report) Write(dir string) (jsonPath, htmlPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("report directory: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", "", fmt.Errorf("report.json: %w", err)
	}
	jsonPath = filepath.Join(dir, "report.json")
	if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
		return "", "", fmt.Errorf("report.json: %w", err)
	}
	html, err := r.HTML()
	if err != nil {
		return "", "", err
	}
	htmlPath = filepath.Join(dir, "report.html")
	if err := os.WriteFile(htmlPath, html, 0o644); err != nil {
		return "", "", fmt.Errorf("report.html: %w", err)
	}
	return jsonPath, htmlPath, nil
}
