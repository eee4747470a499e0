package orchestration

import (
	"slices"
	"testing"

	"github.com/nodewright/nodewright/shared/disruption"
)

// A consolidation a Balanced NodePool approved records Karpenter's
// ConsolidationApproved: on the Node and NodeClaim of a one-node move, on
// each scoring NodePool of a multi-node one; a command no Balanced pool
// scored records none.
func TestConsolidationApprovedEvents(t *testing.T) {
	score := disruption.ScoreMove("default", 0.16, 2, disruption.PoolTotals{Cost: 1.6, DisruptionCost: 20})
	cases := []struct {
		name   string
		scores []disruption.Score
		multi  bool
		want   []string
	}{
		{"WhenEmptyOrUnderutilized", nil, false, nil},
		{"Balanced, one node", []disruption.Score{score}, false, []string{"Node/ip-a:ConsolidationApproved", "NodeClaim/nc-a:ConsolidationApproved"}},
		{"Balanced, several nodes", []disruption.Score{score}, true, []string{"NodePool/default:ConsolidationApproved"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			cmd := command(false)
			if tc.multi {
				r.addCandidate("b")
				r.rebuild()
				cmd.Method, cmd.Candidates, cmd.Nodes = disruption.MethodMultiNode, []string{"nc-a", "nc-b"}, []string{"ip-a", "ip-b"}
			}
			cmd.Scores = tc.scores
			r.start(cmd)
			var got []string
			for _, e := range r.events.onKinds {
				if slices.Contains([]string{"Node/ip-a:ConsolidationApproved", "NodeClaim/nc-a:ConsolidationApproved", "NodePool/default:ConsolidationApproved",
					"Node/ip-b:ConsolidationApproved"}, e) {
					got = append(got, e)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("events %v, want %v (all: %v)", got, tc.want, r.events.onKinds)
			}
		})
	}
}
