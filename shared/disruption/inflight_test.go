package disruption

import (
	"maps"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// TestInFlightNodeAsProvisionSeesIt: a NodeClaim launched but not
// registered is the same Node to consolidation as to provisioning, so a
// pending pod that selects it by its EC2NodeClass or its region is placed
// on it by both (consolidation then leaves that room to the pod), never on
// new capacity by one and on the launch by the other.
func TestInFlightNodeAsProvisionSeesIt(t *testing.T) {
	for _, tc := range []struct{ name, key, value string }{
		{"ec2nodeclass", apis.LabelEC2NodeClass, "default"},
		{"region", apis.LabelRegion, "us-east-1"},
		{"zone", apis.LabelZone, zoneA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.recs = append(w.recs, &state.NodeClaim{Name: "nc-launching", NodePool: "default", NodeClass: "default", Phase: state.Launched,
				InstanceID: "i-launching", InstanceType: "c4", Zone: zoneA, CapacityType: apis.CapacityTypeOnDemand, CreatedAt: now.Add(-time.Minute)})
			p := w.pending("selective", "500m")
			p.Spec.NodeSelector = map[string]string{tc.key: tc.value}
			in := w.inputs()
			key := podKey(p)

			prep := provision.Prepare(provision.Inputs{View: &provision.View{Pods: in.Pods, Nodes: in.Nodes}, Records: in.Records,
				NodePools: in.NodePools, NodeClasses: in.NodeClasses, Catalog: in.Catalog, Zones: in.Zones, Spot: in.Spot})
			res, err := scheduling.Solve(prep.Input)
			if err != nil {
				t.Fatal(err)
			}
			provisioned := ""
			for _, pl := range res.ExistingNodes {
				for _, k := range pl.Pods {
					if k == key {
						provisioned = pl.Node
					}
				}
			}

			v := newView(&in)
			v.baseline()
			consolidated := ""
			for node, pods := range v.reserved {
				for _, rp := range pods {
					if podKey(rp) == key {
						consolidated = node
					}
				}
			}
			if provisioned != "nc-launching" || consolidated != "nc-launching" {
				t.Errorf("pod selecting %s=%s: provisioning places it on %q, consolidation on %q; want both on the in-flight nc-launching",
					tc.key, tc.value, provisioned, consolidated)
			}

			var provisionNode map[string]string
			for _, n := range prep.Input.Nodes {
				if n.InFlight && n.Node.Name == "nc-launching" {
					provisionNode = n.Node.Labels
				}
			}
			if len(v.inflight) != 1 || !maps.Equal(v.inflight[0].Node.Labels, provisionNode) {
				var got map[string]string
				if len(v.inflight) == 1 {
					got = v.inflight[0].Node.Labels
				}
				t.Errorf("in-flight node labels: consolidation %v, provisioning %v; want the same", got, provisionNode)
			}
		})
	}
}
