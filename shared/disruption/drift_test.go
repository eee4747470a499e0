package disruption

import (
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
)

// TestDriftReasons: each way a node drifts is typed with Karpenter's
// Drifted condition reason, and what is not known never drifts.
func TestDriftReasons(t *testing.T) {
	set := func(ids ...string) map[string]bool {
		out := map[string]bool{}
		for _, id := range ids {
			out[id] = true
		}
		return out
	}
	// placed gives node a its subnet and security groups, the class
	// resolving to subnet-1 and sg-1, sg-2.
	placed := func(w *world) {
		w.node("a", "c4", od)
		w.pods("a", 1, "500m")
		w.rec("a").SubnetID = "subnet-1"
		w.rec("a").SecurityGroups = []string{"sg-2", "sg-1"}
		w.subnets = map[string]map[string]bool{"default": set("subnet-1", "subnet-9")}
		w.sgs = map[string]map[string]bool{"default": set("sg-1", "sg-2")}
	}
	cases := []struct {
		name  string
		ref   string
		build func(w *world)
		// want is the drift reason ("": not drifted), why a word of its
		// explanation.
		want DriftReason
		why  string
	}{
		{
			name: "the NodePool template changed",
			ref:  "nodeclaim/disruption/drift.go areStaticFieldsDrifted",
			build: func(w *world) {
				placed(w)
				w.pools[0].Spec.Template.ObjectMeta.Labels = map[string]string{"team": "new"}
			},
			want: DriftNodePool, why: "NodePool default template changed",
		},
		{
			name: "the node no longer meets its NodePool's requirements",
			ref:  "nodeclaim/disruption/drift.go areRequirementsDrifted",
			build: func(w *world) {
				placed(w)
				onDemandOnly(w.pools[0])
				w.rec("a").CapacityType = spot
				relabel(w, "a", spot)
			},
			want: DriftRequirements, why: "no longer allows karpenter.sh/capacity-type=spot",
		},
		{
			name: "requirements drift is checked before the class",
			ref:  "nodeclaim/disruption/drift.go isDrifted (static and requirements drift before the cloud provider's)",
			build: func(w *world) {
				placed(w)
				onDemandOnly(w.pools[0])
				relabel(w, "a", spot)
				w.sgs["default"] = set("sg-3")
			},
			want: DriftRequirements, why: "capacity-type=spot",
		},
		{
			name:  "the EC2NodeClass changed",
			ref:   "aws/karpenter-provider-aws pkg/cloudprovider/drift.go areStaticFieldsDrifted",
			build: func(w *world) { placed(w); w.classes[0].Spec.Tags = map[string]string{"cost-center": "42"} },
			want:  DriftNodeClass, why: "EC2NodeClass default changed",
		},
		{
			name:  "the AMI is no longer selected",
			ref:   "aws/karpenter-provider-aws pkg/cloudprovider/drift.go isAMIDrifted",
			build: func(w *world) { placed(w); w.images = map[string]map[string]bool{"default": set("ami-2")} },
			want:  DriftAMI, why: "AMI ami-1",
		},
		{
			name:  "a security group left the class's selection",
			ref:   "aws/karpenter-provider-aws pkg/cloudprovider/drift.go areSecurityGroupsDrifted",
			build: func(w *world) { placed(w); w.sgs["default"] = set("sg-1") },
			want:  DriftSecurityGroup, why: "security groups sg-1, sg-2 are no longer those EC2NodeClass default selects (now sg-1)",
		},
		{
			name:  "a security group joined the class's selection",
			ref:   "aws/karpenter-provider-aws pkg/cloudprovider/drift.go areSecurityGroupsDrifted (sets must be equal)",
			build: func(w *world) { placed(w); w.sgs["default"] = set("sg-1", "sg-2", "sg-3") },
			want:  DriftSecurityGroup, why: "(now sg-1, sg-2, sg-3)",
		},
		{
			name:  "the subnet left the class's selection",
			ref:   "aws/karpenter-provider-aws pkg/cloudprovider/drift.go isSubnetDrifted",
			build: func(w *world) { placed(w); w.subnets["default"] = set("subnet-9") },
			want:  DriftSubnet, why: "subnet subnet-1 is no longer selected by EC2NodeClass default (now subnet-9)",
		},
		{
			name:  "security groups are checked before the subnet",
			ref:   "aws/karpenter-provider-aws pkg/cloudprovider/drift.go isNodeClassDrifted (security groups, then subnet)",
			build: func(w *world) { placed(w); w.subnets["default"] = set("subnet-9"); w.sgs["default"] = set("sg-3") },
			want:  DriftSecurityGroup, why: "now sg-3",
		},
		{
			name:  "a subnet among those selected, and the same security groups: not drifted",
			ref:   "aws/karpenter-provider-aws pkg/cloudprovider/drift.go (the subnet need only be one of the class's)",
			build: placed,
		},
		{
			name: "a record without its subnet or security groups: unknown, not drifted",
			ref:  "Nodewright: records written before the launch kept them",
			build: func(w *world) {
				placed(w)
				w.rec("a").SubnetID, w.rec("a").SecurityGroups = "", nil
				w.subnets["default"], w.sgs["default"] = set("subnet-9"), set("sg-3")
			},
		},
		{
			name:  "a class not resolved: not drifted",
			ref:   "aws/karpenter-provider-aws pkg/cloudprovider/drift.go (no subnets or security groups discovered: no drift)",
			build: func(w *world) { placed(w); w.subnets, w.sgs = nil, map[string]map[string]bool{"other": set("sg-3")} },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.pools[0].Spec.Disruption.ConsolidateAfter = apis.NillableDuration{Raw: apis.Never}
			tc.build(w)
			cmds, rep := w.decide(t)
			if tc.want == "" {
				if len(cmds) != 0 {
					t.Fatalf("%s: commands %v, want none (rejected %v)", tc.ref, cmds, rep.Rejected)
				}
				return
			}
			if len(cmds) != 1 || cmds[0].Method != MethodDrift {
				t.Fatalf("%s: commands %+v, want one drift (rejected %v)", tc.ref, cmds, rep.Rejected)
			}
			// The explanation (events, the decision log) names it too.
			if cmds[0].Drift != tc.want || !strings.Contains(cmds[0].Explanation, string(tc.want)+": ") || !strings.Contains(cmds[0].Explanation, tc.why) {
				t.Errorf("%s: drift %q explanation %q, want %q with %q", tc.ref, cmds[0].Drift, cmds[0].Explanation, tc.want, tc.why)
			}
		})
	}
}

// relabel sets node name's capacity-type label and record.
func relabel(w *world, name, ct string) {
	for _, n := range w.nodes {
		if n.Name == name {
			n.Labels[apis.LabelCapacityType] = ct
		}
	}
	w.rec(name).CapacityType = ct
}
