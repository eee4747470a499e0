package disruption

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
)

// inReservation puts the node in a capacity reservation (its record's
// claim names it, as a reserved launch's does).
func inReservation(id, kind string) nodeOpt {
	return func(n *corev1.Node, r *state.NodeClaim) {
		r.Claim.CapacityReservationID, r.Claim.CapacityReservationType = id, kind
		n.Labels[apis.LabelCapacityReservationID], n.Labels[apis.LabelCapacityReservationType] = id, kind
	}
}

// TestReservedNodes: a node in a Capacity Block about to end expires
// (forceful, whatever blocks it, without budget: drained and replaced
// ahead of EC2's reclaim); a reserved node is priced as already paid, so
// consolidation never replaces it with a paid one, where the same node
// on-demand is replaced by a cheaper type.
func TestReservedNodes(t *testing.T) {
	end := now.Add(35 * time.Minute)
	cases := []struct {
		name     string
		ct       string
		id       string
		ending   map[string]time.Time
		selected map[string]map[string]bool // CurrentReservations
		want     []string
	}{
		{"a block about to end drains its node", apis.CapacityTypeReserved, "cr-block", map[string]time.Time{"cr-block": end}, nil, []string{"expiration: a -> c1/spot"}},
		{"another block's end leaves it", apis.CapacityTypeReserved, "cr-block", map[string]time.Time{"cr-other": end}, nil, []string{}},
		{"a reserved node is not replaced by a paid one", apis.CapacityTypeReserved, "cr-odcr", nil, nil, []string{}},
		{"the same node on-demand is", apis.CapacityTypeOnDemand, "", nil, nil, []string{"single-node: a -> c1/spot"}},
		{"its reservation still selected: no drift", apis.CapacityTypeReserved, "cr-odcr", nil, map[string]map[string]bool{"default": {"cr-odcr": true}}, []string{}},
		{"its reservation no longer selected: drift", apis.CapacityTypeReserved, "cr-odcr", nil, map[string]map[string]bool{"default": {"cr-new": true}}, []string{"drift: a -> c1/spot"}},
		{"its class not resolved: no drift", apis.CapacityTypeReserved, "cr-odcr", nil, map[string]map[string]bool{"other": {}}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.pools[0].Spec.Template.Spec.Requirements[0].Values = []string{apis.CapacityTypeReserved, apis.CapacityTypeSpot, apis.CapacityTypeOnDemand}
			opts := []nodeOpt{}
			if tc.id != "" {
				opts = append(opts, inReservation(tc.id, apis.CapacityReservationTypeCapacityBlock))
			}
			if tc.ending != nil {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("0")}
			}
			w.node("a", "c8", tc.ct, opts...)
			w.pods("a", 1, "500m")
			in := w.inputs()
			in.EndingBlocks, in.CurrentReservations = tc.ending, tc.selected
			cmds, _ := Decide(in)
			got := summaries(cmds)
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("commands %v, want %v", got, tc.want)
			}
			if len(cmds) > 0 && cmds[0].Method == MethodExpiration && cmds[0].Reason != ReasonExpired {
				t.Errorf("reason %s, want %s", cmds[0].Reason, ReasonExpired)
			}
			if len(cmds) > 0 && cmds[0].Method == MethodDrift && !strings.Contains(cmds[0].Explanation, string(DriftCapacityReservation)) {
				t.Errorf("drift explained %q, want %s", cmds[0].Explanation, DriftCapacityReservation)
			}
		})
	}
}
