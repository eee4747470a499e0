package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/state"
)

// decisions are a pod's history, newest first: placed on a launched
// NodeClaim that consolidation later removed, after a round that left it
// pending.
func decisions() []state.Decision {
	launched := state.DecidedNodeClaim{Name: "default-x7k2p", NodePool: "default", InstanceType: "m7g.large", CapacityType: "spot", Zone: "us-east-1b",
		PricePerHour: 0.03, Pods: 2, OptionsTotal: 12, Options: []state.DecidedOption{
			{InstanceType: "m7g.large", CapacityType: "spot", PricePerHour: 0.03},
			{InstanceType: "m6g.large", CapacityType: "spot", PricePerHour: 0.031},
			{InstanceType: "c7g.xlarge", CapacityType: "on-demand", PricePerHour: 0.145},
		}}
	return []state.Decision{
		{Time: t0.Add(-4 * time.Minute), Function: "provision", Kind: "replacement", Summary: "replacement for default-x7k2p: spot-interruption: 2 pending, 2 reschedulable: launched 1 NodeClaims ($0.0100/h), 0 failed, 0 pods left pending",
			Pods: map[string]string{"default/web-9": "nodeclaim default-r (m7g.medium, spot, us-east-1a, $0.0100/h; options: m7g.medium)"}},
		{Time: t0.Add(-5 * time.Minute), Function: "consolidation", Kind: "consolidation-done", Summary: "consolidation single-node done: Underutilized ip-9, $0.0300/h -> $0.0100/h",
			Action: &state.DecidedAction{ID: "a1", Kind: "consolidation", Step: "done", NodeClaims: []string{"default-x7k2p"}, PriceBefore: 0.03, PriceAfter: 0.01}},
		{Time: t0.Add(-6 * time.Minute), Function: "consolidation", Kind: "consolidation-planned", Summary: "unrelated",
			Action: &state.DecidedAction{ID: "a0", Kind: "consolidation", Step: "planned", NodeClaims: []string{"default-other"}}},
		{Time: t0.Add(-10 * time.Minute), Function: "provision", Kind: "round", Summary: "2 pending, 0 reschedulable: launched 1 NodeClaims ($0.0300/h), 0 failed, 0 pods left pending",
			Pods: map[string]string{
				"default/web-1": "nodeclaim default-x7k2p (m7g.large, spot, us-east-1b, $0.0300/h; options: m7g.large,m6g.large,c7g.xlarge and 9 more)",
				"default/web-2": "nodeclaim default-x7k2p (m7g.large, spot, us-east-1b, $0.0300/h; options: m7g.large,m6g.large,c7g.xlarge and 9 more)",
				"default/big":   "pending: no instance type in NodePool default has 2Ti memory",
			},
			NodeClaims: []state.DecidedNodeClaim{launched}},
		{Time: t0.Add(-12 * time.Minute), Function: "provision", Kind: "round", Summary: "earlier round",
			Pods: map[string]string{"default/web-1": "pending: NodePool default is at its limit of cpu 8"}},
		{Time: t0.Add(-20 * time.Minute), Function: "provision", Kind: "round", Summary: "big", PodsOmitted: 40,
			Pods: map[string]string{"default/web-3": "node ip-10-0-0-1"}},
	}
}

func TestExplain(t *testing.T) {
	recs := []*state.NodeClaim{{Name: "default-x7k2p", NodePool: "default", Phase: state.Terminating, NodeName: "ip-9", InstanceType: "m7g.large",
		CapacityType: "spot", Zone: "us-east-1b", PricePerHour: 0.03, CreatedAt: t0.Add(-10 * time.Minute)}}
	drifted := []*state.NodeClaim{{Name: "default-x7k2p", NodePool: "default", Phase: state.Disrupting, NodeName: "ip-9", CreatedAt: t0.Add(-10 * time.Minute),
		Disruption: &state.Disruption{Action: "consolidation-d", Reason: "Drifted", Drift: "SecurityGroupDrift"}}}
	for _, tc := range []struct {
		name    string
		args    []string
		records []*state.NodeClaim
		code    int
		want    []string
		notWant []string
	}{
		{name: "placed, then consolidated", args: []string{"explain", "default/web-1", "-stack", "s"}, records: recs, want: []string{
			"pod default/web-1, cluster demo",
			"2026-11-24T11:50:00Z (10m ago), provision round:\n  placed on the new NodeClaim default-x7k2p",
			"NodeClaim default-x7k2p (NodePool default, 2 pods) launched as m7g.large, spot, us-east-1b at $0.0300/h",
			"chosen from 12 instance types; the cheapest:",
			"m7g.large      spot       $0.0300  <- launched",
			"c7g.xlarge     on-demand  $0.1450",
			"and 9 more",
			"NodeClaim default-x7k2p now: terminating, Node ip-9",
			"since then:\n  2026-11-24T11:55:00Z (5m ago) consolidation single-node done: Underutilized ip-9, $0.0300/h -> $0.0100/h\n  2026-11-24T11:56:00Z (4m ago) replacement for default-x7k2p: spot-interruption",
			"earlier decisions about the pod:\n  2026-11-24T11:48:00Z (12m ago) left pending: NodePool default is at its limit of cpu 8",
		}, notWant: []string{"unrelated"}},
		{name: "drifted since", args: []string{"explain", "default/web-1", "-stack", "s"}, records: drifted, want: []string{
			"NodeClaim default-x7k2p now: disrupting, Node ip-9, being disrupted (consolidation-d: Drifted: SecurityGroupDrift)",
		}},
		{name: "NodeClaim gone", args: []string{"explain", "-stack", "s", "web-2"}, want: []string{
			"placed on the new NodeClaim default-x7k2p", "NodeClaim default-x7k2p is no longer in the state table",
		}, notWant: []string{"earlier decisions"}},
		{name: "pending", args: []string{"explain", "default/big", "-stack", "s"}, want: []string{
			"left pending: no instance type in NodePool default has 2Ti memory",
		}, notWant: []string{"NodeClaim default-x7k2p", "since then"}},
		{name: "existing node", args: []string{"explain", "default/web-3", "-stack", "s"}, want: []string{
			"fits on the existing node ip-10-0-0-1 (nothing launched; kube-scheduler binds it)",
		}},
		{name: "no history", args: []string{"explain", "default/web-1", "-stack", "s", "-history", "0"}, records: recs, notWant: []string{"earlier decisions"}},
		{name: "not found", args: []string{"explain", "other/web-1", "-stack", "s"}, code: exitError, want: []string{
			"no decision names the pod since 2026-11-23T12:00:00Z",
			"1 decisions left some pods out (too many to record): the pod may be among them",
		}},
		{name: "outside -since", args: []string{"explain", "default/web-3", "-stack", "s", "-since", "15m"}, code: exitError, want: []string{"no decision names the pod since 2026-11-24T11:45:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr, _ := runState(t, &fakeState{records: tc.records, decisions: decisions()}, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, stdout)
				}
			}
			if tc.code == exitError && !strings.Contains(stderr, "check the namespace and -cluster, widen -since") {
				t.Errorf("stderr %q does not say what to do", stderr)
			}
		})
	}
}

func TestExplainJSON(t *testing.T) {
	code, stdout, stderr, _ := runState(t, &fakeState{decisions: decisions()}, "explain", "default/web-1", "-stack", "s", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ex explanation
	if err := json.Unmarshal([]byte(stdout), &ex); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if !ex.Found || ex.Latest == nil || ex.Latest.NodeClaimName != "default-x7k2p" || ex.Latest.NodeClaim == nil ||
		ex.Latest.NodeClaim.Options[1].InstanceType != "m6g.large" || len(ex.Later) != 2 || ex.Later[0].Action.PriceAfter != 0.01 || ex.Later[1].Kind != "replacement" ||
		len(ex.Earlier) != 1 || ex.NodeClaim != nil {
		t.Errorf("explanation %s", stdout)
	}
}

func TestReplacedNodeClaim(t *testing.T) {
	for _, tc := range []struct {
		d    state.Decision
		want string
	}{
		{state.Decision{Kind: "replacement", Summary: "replacement for default-a: spot-interruption: 1 pending"}, "default-a"},
		{state.Decision{Kind: "round", Summary: "replacement for default-a: x"}, ""},
		{state.Decision{Kind: "replacement", Summary: "replacement for default-a,default-b: consolidation"}, ""},
		{state.Decision{Kind: "replacement", Summary: "something else"}, ""},
	} {
		if got := replacedNodeClaim(&tc.d); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestNodeClaimName(t *testing.T) {
	for outcome, want := range map[string]string{
		"nodeclaim default-a (m5.large, spot, us-east-1a, $0.03/h; options: m5.large)": "default-a",
		"nodeclaim default-b failed to launch: InsufficientInstanceCapacity":           "default-b",
		"in-flight nodeclaim default-c":                                                "default-c",
		"node ip-1":                                                                    "",
		"pending: nodeclaim x":                                                         "",
	} {
		if got := nodeClaimName(outcome); got != want {
			t.Errorf("%q: %q, want %q", outcome, got, want)
		}
	}
}
