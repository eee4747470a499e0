package scheduling_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// scenario is a small cluster and the facts its plan must show.
type scenario struct {
	// mirrors names the Karpenter Its the scenario mirrors, as
	// "<suite>:<line>" at the version docs/karpenter-parity.md pins.
	mirrors []string
	name    string
	in      scheduling.Input
	want    []check
	// err, when set, is what Solve's error must say.
	err string
}

// TestScenarios solves every scenario twice: the plan must show the
// scenario's facts, satisfy the invariants every plan satisfies, and be the
// same bytes both times.
func TestScenarios(t *testing.T) {
	var all []scenario
	for _, group := range [][]scenario{
		resourceScenarios(), selectionScenarios(), taintScenarios(), poolScenarios(),
		offeringScenarios(), existingScenarios(), topologyScenarios(), affinityScenarios(), claimScenarios(),
		limitScenarios(), daemonScenarios(), minValuesScenarios(), domainScenarios(), startupScenarios(), aliasScenarios(), reasonScenarios(),
		schedulingParity(), topologyParity(), affinityParity(), selectionParity(), provisioningParity(), awsParity(), volumeParity(),
		overflowScenarios(), imageScenarios(),
	} {
		all = append(all, group...)
	}
	if len(all) < 70 {
		t.Fatalf("%d scenarios, want at least 70", len(all))
	}
	names := map[string]bool{}
	for _, sc := range all {
		if names[sc.name] {
			t.Fatalf("duplicate scenario %q", sc.name)
		}
		names[sc.name] = true
		t.Run(sc.name, func(t *testing.T) {
			r, err := scheduling.Solve(sc.in)
			if sc.err != "" {
				if err == nil || !strings.Contains(err.Error(), sc.err) {
					t.Fatalf("Solve: error %v, want one saying %q", err, sc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			checkInvariants(t, sc.in, r)
			p := newPlan(sc.in, r)
			for _, c := range sc.want {
				c(t, p)
			}
			again, err := scheduling.Solve(sc.in)
			if err != nil {
				t.Fatalf("second Solve: %v", err)
			}
			if a, b := resultJSON(t, r), resultJSON(t, again); !bytes.Equal(a, b) {
				t.Errorf("same input, different plans:\n%s\n%s", a, b)
			}
			if t.Failed() {
				t.Logf("plan:%s", summary(r))
			}
		})
	}
}
