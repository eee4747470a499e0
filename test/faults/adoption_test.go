package faults

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestAdoptionCrashes crashes the adoption schedule's sweeps at every call
// they make (the occurrences an adoption of two nodes reaches), before and
// after it takes effect, while another sweep and a consolidation tick
// race them: whatever dies, the follow-up leaves each of Karpenter's
// instances with one record, none terminated by the switch (invariant 13),
// and every other invariant holding.
func TestAdoptionCrashes(t *testing.T) {
	seed := uint64(slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == "adoption-with-sweep-and-consolidation" }))
	if policyFor(seed).crash != 0 || policyFor(seed).fail != 0 {
		t.Fatalf("seed %d has random faults: the targeted crashes would not replay", seed)
	}
	clean := runOne(seed, nil)
	if clean.err != nil || len(clean.violations) > 0 {
		t.Fatalf("the adoption schedule without crashes: %v %v", clean.err, clean.violations)
	}
	var sites []string
	for k := range clean.sim.reached {
		if flow, site, _ := strings.Cut(k, "|"); flow == "sweep" {
			sites = append(sites, site)
		}
	}
	slices.Sort(sites)
	adoption := 0
	runs := 0
	for _, site := range sites {
		for occ := 1; occ <= 3; occ++ {
			for _, after := range []bool{false, true} {
				tg := target{Flow: "sweep", Site: site, Occ: occ, After: after}
				r := runOne(seed, []target{tg})
				if !r.sim.targetHit[0] {
					continue
				}
				runs++
				if strings.Contains(site, "shared/provision/adopt.go") {
					adoption++
				}
				if r.err != nil || len(r.violations) > 0 {
					t.Errorf("%s: %v %v\n  replay: %s", tg, r.err, r.violations, r.command())
				}
			}
		}
	}
	if adoption == 0 {
		t.Fatalf("no crash at adoption's calls among %d sites %v (reached: %v)", len(sites), sites, slices.Sorted(maps.Keys(clean.sim.reached)))
	}
	t.Logf("%d crashes of the sweeps over %d sites, %d at adoption's own calls: every invariant held", runs, len(sites), adoption)
}
