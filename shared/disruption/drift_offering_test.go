package disruption

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// A node whose placement group is not the one its class selects now
// drifts with PlacementGroupDrift; one whose instance type the region no
// longer offers (where it runs) drifts with InstanceTypeNotFound, once it
// is an hour old, as Karpenter's core checks it.
func TestDriftOfPlacementAndOfferings(t *testing.T) {
	cases := []struct {
		name   string
		build  func(w *world)
		inputs func(in *Inputs)
		want   DriftReason
		why    string
	}{
		{name: "the class selects another placement group",
			build:  func(w *world) { w.rec("a").PlacementGroupID = "pg-old" },
			inputs: func(in *Inputs) { in.CurrentPlacementGroups = map[string]string{"default": "pg-new"} },
			want:   DriftPlacementGroup, why: "placement group pg-old is no longer the one EC2NodeClass default selects (now pg-new)"},
		{name: "the class selects a placement group the node is not in",
			inputs: func(in *Inputs) { in.CurrentPlacementGroups = map[string]string{"default": "pg-new"} },
			want:   DriftPlacementGroup, why: "now places its nodes in placement group pg-new"},
		{name: "the class no longer selects the node's placement group",
			build:  func(w *world) { w.rec("a").PlacementGroupID = "pg-old" },
			inputs: func(in *Inputs) { in.CurrentPlacementGroups = map[string]string{"default": ""} },
			want:   DriftPlacementGroup, why: "it selects none"},
		{name: "the same placement group: not drifted",
			build:  func(w *world) { w.rec("a").PlacementGroupID = "pg-1" },
			inputs: func(in *Inputs) { in.CurrentPlacementGroups = map[string]string{"default": "pg-1"} }},
		{name: "a class not resolved: not drifted",
			build: func(w *world) { w.rec("a").PlacementGroupID = "pg-1" }},
		{name: "the type is gone from the region",
			inputs: func(in *Inputs) { in.Catalog = catalogWithout(in, "c4") },
			want:   DriftInstanceTypeNotFound, why: "instance type c4 is no longer offered in the region"},
		{name: "the type is no longer offered in the node's zone",
			inputs: func(in *Inputs) { in.Catalog = catalogWithZones(in, "c4", zoneB) },
			want:   DriftInstanceTypeNotFound, why: "instance type c4 is no longer offered in " + zoneA},
		{name: "a node under an hour old is not checked",
			build:  func(w *world) { w.rec("a").CreatedAt = now.Add(-30 * time.Minute) },
			inputs: func(in *Inputs) { in.Catalog = catalogWithout(in, "c4") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.pools[0].Spec.Disruption.ConsolidateAfter = apis.NillableDuration{Raw: apis.Never}
			w.node("a", "c4", od)
			w.pods("a", 1, "500m")
			w.rec("a").CreatedAt = now.Add(-2 * time.Hour)
			if tc.build != nil {
				tc.build(w)
			}
			in := w.inputs()
			if tc.inputs != nil {
				tc.inputs(&in)
			}
			cmds, rep := Decide(in)
			if tc.want == "" {
				if len(cmds) != 0 {
					t.Fatalf("commands %v, want none (rejected %v)", cmds, rep.Rejected)
				}
				return
			}
			if len(cmds) != 1 || cmds[0].Method != MethodDrift {
				t.Fatalf("commands %+v, want one drift (rejected %v, skipped %v)", cmds, rep.Rejected, rep.Skipped)
			}
			if cmds[0].Drift != tc.want || !strings.Contains(cmds[0].Explanation, tc.why) {
				t.Errorf("drift %q explanation %q, want %q with %q", cmds[0].Drift, cmds[0].Explanation, tc.want, tc.why)
			}
		})
	}
}

// catalogWithout is the inputs' catalog less the type.
func catalogWithout(in *Inputs, name string) *catalog.Catalog {
	var kept []catalog.InstanceType
	for _, it := range in.Catalog.Types() {
		if it.Name != name {
			kept = append(kept, *it)
		}
	}
	return catalog.New(kept)
}

// catalogWithZones is the inputs' catalog with the type offered only in zones.
func catalogWithZones(in *Inputs, name string, zones ...string) *catalog.Catalog {
	var all []catalog.InstanceType
	for _, it := range in.Catalog.Types() {
		c := *it
		if c.Name == name {
			c.Zones = slices.Clone(zones)
		}
		all = append(all, c)
	}
	return catalog.New(all)
}
