package apis

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Monday 2025-03-03 is a weekday; times are UTC unless the case says otherwise.
func at(day, hour, minute int) time.Time {
	return time.Date(2025, time.March, day, hour, minute, 0, 0, time.UTC)
}

func businessHours(nodes string, reasons ...DisruptionReason) Budget {
	s := "0 9 * * mon-fri"
	return Budget{Nodes: nodes, Schedule: &s, Duration: &metav1.Duration{Duration: 8 * time.Hour}, Reasons: reasons}
}

func TestBudgetAllowedDisruptions(t *testing.T) {
	cases := []struct {
		name     string
		budget   Budget
		now      time.Time
		numNodes int
		want     int
	}{
		{"percent rounds up", Budget{Nodes: "10%"}, at(3, 10, 0), 25, 3},
		{"percent exact", Budget{Nodes: "10%"}, at(3, 10, 0), 30, 3},
		{"percent of one node", Budget{Nodes: "10%"}, at(3, 10, 0), 1, 1},
		{"percent of no nodes", Budget{Nodes: "50%"}, at(3, 10, 0), 0, 0},
		{"zero percent", Budget{Nodes: "0%"}, at(3, 10, 0), 100, 0},
		{"hundred percent", Budget{Nodes: "100%"}, at(3, 10, 0), 7, 7},
		{"count", Budget{Nodes: "5"}, at(3, 10, 0), 2, 5},
		{"empty nodes count as the default 10%", Budget{}, at(3, 10, 0), 25, 3},
		{"zero count", Budget{Nodes: "0"}, at(3, 10, 0), 10, 0},
		{"schedule active at start", businessHours("0"), at(3, 9, 0), 10, 0},
		{"schedule active inside", businessHours("0"), at(3, 12, 30), 10, 0},
		{"schedule active just before the end", businessHours("0"), at(3, 16, 59), 10, 0},
		{"schedule inactive at the end", businessHours("0"), at(3, 17, 0), 10, Unlimited},
		{"schedule inactive before", businessHours("0"), at(3, 8, 59), 10, Unlimited},
		{"schedule inactive on saturday", businessHours("0"), at(8, 10, 0), 10, Unlimited},
		{"schedule in UTC whatever the caller's zone", businessHours("0"),
			time.Date(2025, time.March, 3, 5, 0, 0, 0, time.FixedZone("EST", -5*3600)), 10, 0},
		{"descriptor", Budget{Nodes: "1", Schedule: ptrTo("@daily"), Duration: &metav1.Duration{Duration: time.Hour}}, at(4, 0, 30), 10, 1},
		{"descriptor inactive", Budget{Nodes: "1", Schedule: ptrTo("@daily"), Duration: &metav1.Duration{Duration: time.Hour}}, at(4, 1, 30), 10, Unlimited},
		{"window spanning midnight", Budget{Nodes: "2", Schedule: ptrTo("0 22 * * *"), Duration: &metav1.Duration{Duration: 4 * time.Hour}}, at(4, 1, 0), 10, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.budget.AllowedDisruptions(tc.now, tc.numNodes)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "allowed", got, tc.want)
		})
	}
}

func TestBudgetErrorsFailClosed(t *testing.T) {
	cases := []struct {
		name   string
		budget Budget
		want   string
	}{
		{"bad nodes", Budget{Nodes: "ten"}, `nodes "ten" is not a count or a percentage`},
		{"bad percent", Budget{Nodes: "150%"}, `nodes "150%" is not a percentage from 0% to 100%`},
		{"bad schedule", Budget{Nodes: "1", Schedule: ptrTo("every day"), Duration: &metav1.Duration{Duration: time.Hour}},
			`budget schedule "every day": want 5 fields`},
		{"schedule alone", Budget{Nodes: "1", Schedule: ptrTo("@daily")}, "budget schedule and duration must be set together"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.budget.AllowedDisruptions(at(3, 10, 0), 10)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			eq(t, "allowed", got, 0)
		})
	}
}

func TestNodePoolAllowedDisruptions(t *testing.T) {
	np := &NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Disruption.Budgets = []Budget{
		{Nodes: "20%"},
		businessHours("0", DisruptionReasonDrifted),
		{Nodes: "3", Reasons: []DisruptionReason{DisruptionReasonEmpty, DisruptionReasonUnderutilized}},
	}
	cases := []struct {
		name   string
		now    time.Time
		nodes  int
		reason DisruptionReason
		want   int
	}{
		{"drift blocked in business hours", at(3, 10, 0), 50, DisruptionReasonDrifted, 0},
		{"drift after hours uses the 20% budget", at(3, 20, 0), 50, DisruptionReasonDrifted, 10},
		{"empty takes the lowest of 20% and 3", at(3, 10, 0), 50, DisruptionReasonEmpty, 3},
		{"underutilized with few nodes: 20% of 4 rounds up to 1", at(3, 10, 0), 4, DisruptionReasonUnderutilized, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := np.AllowedDisruptions(tc.now, tc.nodes, tc.reason)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "allowed", got, tc.want)
		})
	}
}

func TestNodePoolAllowedDisruptionsEdges(t *testing.T) {
	np := &NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	got, err := np.AllowedDisruptions(at(3, 10, 0), 25, DisruptionReasonEmpty)
	if err != nil || got != 3 {
		t.Errorf("unset budgets count as the 10%% default: got %d, %v", got, err)
	}
	np.Spec.Disruption.Budgets = []Budget{}
	if got, err := np.AllowedDisruptions(at(3, 10, 0), 25, DisruptionReasonEmpty); err != nil || got != Unlimited {
		t.Errorf("no budgets means no limit: got %d, %v", got, err)
	}
	if _, err := np.AllowedDisruptions(at(3, 10, 0), 25, "Expired"); err == nil || err.Error() != `nodepool p: unknown disruption reason "Expired"` {
		t.Errorf("unknown reason: %v", err)
	}
	np.Spec.Disruption.Budgets = []Budget{{Nodes: "50%"}, {Nodes: "x"}}
	got, err = np.AllowedDisruptions(at(3, 10, 0), 25, DisruptionReasonDrifted)
	if err == nil || got != 0 || err.Error() != `nodepool p: budgets[1]: nodes "x" is not a count or a percentage` {
		t.Errorf("a bad budget fails closed: got %d, %v", got, err)
	}
	// A budget limited to other reasons does not count, even if it is broken.
	np.Spec.Disruption.Budgets = []Budget{{Nodes: "50%"}, {Nodes: "x", Reasons: []DisruptionReason{DisruptionReasonDrifted}}}
	if got, err := np.AllowedDisruptions(at(3, 10, 0), 25, DisruptionReasonEmpty); err != nil || got != 13 {
		t.Errorf("budgets for other reasons are skipped: got %d, %v", got, err)
	}
}

// Budgets read from YAML behave like built ones (the documented example).
func TestBudgetsFromYAML(t *testing.T) {
	c := mustParse(t, nodePoolDoc(template()+`disruption:
  consolidateAfter: 1m
  budgets:
  - nodes: 10%
  - schedule: "0 9 * * mon-fri"
    duration: 8h
    nodes: "0"
`))
	np := c.NodePools[0]
	for _, tc := range []struct {
		now  time.Time
		want int
	}{{at(3, 9, 30), 0}, {at(3, 18, 0), 2}, {at(9, 12, 0), 2}} {
		got, err := np.AllowedDisruptions(tc.now, 11, DisruptionReasonUnderutilized)
		if err != nil || got != tc.want {
			t.Errorf("at %s: got %d, %v; want %d", tc.now, got, err, tc.want)
		}
	}
}
