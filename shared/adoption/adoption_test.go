package adoption

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/state"
)

var (
	launched = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	now      = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
)

// karpenterNodeClaim is a NodeClaim object as Karpenter v1.14.1 writes it
// (built from its type), read as the sweep reads the cluster's.
func karpenterNodeClaim(t *testing.T, name, pool string, conds ...status.Condition) *nodeclaim.NodeClaim {
	t.Helper()
	k := &karpv1.NodeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "name", CreationTimestamp: metav1.NewTime(launched.Add(-time.Second)),
			Labels:      map[string]string{karpv1.NodePoolLabelKey: pool, "team": "web", corev1.LabelInstanceTypeStable: "m5.large"},
			Annotations: map[string]string{karpv1.NodePoolHashAnnotationKey: "1234"},
			Finalizers:  []string{karpv1.TerminationFinalizer}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge"}, MinValues: ptr(2)},
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}},
			},
			Taints:       []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "web-class"},
		},
		Status: karpv1.NodeClaimStatus{
			ProviderID: "aws:///us-east-1a/i-k1", NodeName: "ip-10-0-1-1", ImageID: "ami-1",
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		},
	}
	k.Status.Conditions = conds
	raw, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	nc := &nodeclaim.NodeClaim{}
	if err := json.Unmarshal(raw, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func karpenterInstance(id, claim, pool string) fleet.Running {
	return fleet.Running{InstanceID: id, InstanceType: "m5.large", Zone: "us-east-1a", State: "running", LaunchTime: launched,
		NodeClaim: claim, NodePool: pool, CapacityType: apis.CapacityTypeSpot, ImageID: "ami-1", SubnetID: "subnet-a", SecurityGroups: []string{"sg-1"}}
}

func readyNode(name, id string, initializedLabel bool) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(launched.Add(time.Minute)),
			Labels: map[string]string{apis.LabelNodePool: "web", apis.LabelEC2NodeClass: "node-label-class"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(launched.Add(2 * time.Minute))}},
		},
	}
	if initializedLabel {
		n.Labels[apis.LabelInitialized] = "true"
	}
	return n
}

func pools() map[string]*apis.NodePool {
	p := &apis.NodePool{}
	p.Name = "web"
	p.Spec.Template.Spec.NodeClassRef = &apis.NodeClassReference{Name: "pool-class"}
	return map[string]*apis.NodePool{"web": p}
}

func TestDecide(t *testing.T) {
	initializedAt := launched.Add(3 * time.Minute)
	initCond := status.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(initializedAt)}
	class := &apis.EC2NodeClass{}
	class.Name = "web-class"
	cases := []struct {
		name      string
		instances []fleet.Running
		nodes     []*corev1.Node
		objects   func(t *testing.T) []*nodeclaim.NodeClaim
		records   []*state.NodeClaim
		check     func(t *testing.T, p Plan)
	}{
		{
			name:      "an initialized node with its NodeClaim becomes an initialized record",
			instances: []fleet.Running{karpenterInstance("i-k1", "web-abcde", "web")},
			nodes:     []*corev1.Node{readyNode("ip-10-0-1-1", "i-k1", false)},
			objects: func(t *testing.T) []*nodeclaim.NodeClaim {
				return []*nodeclaim.NodeClaim{karpenterNodeClaim(t, "web-abcde", "web", initCond)}
			},
			check: func(t *testing.T, p Plan) {
				if len(p.Adopt) != 1 || len(p.Skip) != 0 {
					t.Fatalf("plan %+v", p)
				}
				r := p.Adopt[0]
				if r.Name != "web-abcde" || r.NodePool != "web" || r.NodeClass != "web-class" || r.Phase != state.Initialized ||
					r.InstanceID != "i-k1" || r.InstanceType != "m5.large" || r.Zone != "us-east-1a" || r.CapacityType != apis.CapacityTypeSpot ||
					r.NodeName != "ip-10-0-1-1" || r.ProviderID != "aws:///us-east-1a/i-k1" || !r.LaunchedAt.Equal(launched) ||
					!r.InitializedAt.Equal(initializedAt) || !r.AdoptedAt.Equal(now) || r.ImageID != "ami-1" || r.SubnetID != "subnet-a" ||
					r.PricePerHour != 0.04 {
					t.Fatalf("record %+v", r)
				}
				if r.NodePoolHash != pools()["web"].Hash() || r.NodeClassHash != class.Hash() {
					t.Errorf("hashes %q %q: want the configured NodePool's and EC2NodeClass's stamped", r.NodePoolHash, r.NodeClassHash)
				}
				if r.Claim.MinValues[corev1.LabelInstanceTypeStable] != 2 || len(r.Claim.Requirements) != 2 || r.Claim.Labels["team"] != "web" ||
					r.Claim.Labels[apis.LabelNodePool] != "" || len(r.Claim.Taints) != 1 || r.Claim.Requests.Cpu().MilliValue() != 1500 {
					t.Errorf("claim %+v", r.Claim)
				}
			},
		},
		{
			name:      "a node without NodeClaim object, Ready with Karpenter's initialized label",
			instances: []fleet.Running{karpenterInstance("i-k1", "web-abcde", "web")},
			nodes:     []*corev1.Node{readyNode("ip-10-0-1-1", "i-k1", true)},
			check: func(t *testing.T, p Plan) {
				if len(p.Adopt) != 1 || p.Adopt[0].Phase != state.Initialized || p.Adopt[0].NodeClass != "node-label-class" {
					t.Fatalf("plan %+v", p)
				}
				// The NodeClaim object made from the record needs
				// requirements (Karpenter's CRD requires them): the pool's,
				// narrowed to the instance.
				got := map[string]string{}
				for _, r := range p.Adopt[0].Claim.Requirements {
					got[r.Key] = fmt.Sprint(r.Operator, r.Values)
				}
				for k, v := range map[string]string{apis.LabelInstanceType: "In[m5.large]", apis.LabelZone: "In[us-east-1a]",
					apis.LabelCapacityType: "In[spot]", apis.LabelNodePool: "In[web]"} {
					if got[k] != v {
						t.Errorf("requirement %s: %q, want %q (all: %v)", k, got[k], v, got)
					}
				}
			},
		},
		{
			name:      "a registered node not yet initialized",
			instances: []fleet.Running{karpenterInstance("i-k1", "web-abcde", "web")},
			nodes:     []*corev1.Node{readyNode("ip-10-0-1-1", "i-k1", false)},
			check: func(t *testing.T, p Plan) {
				if len(p.Adopt) != 1 || p.Adopt[0].Phase != state.Registered || !p.Adopt[0].InitializedAt.IsZero() {
					t.Fatalf("plan %+v", p.Adopt[0])
				}
			},
		},
		{
			name:      "an instance whose Node has not registered is launched: the registration timeout counts from its launch",
			instances: []fleet.Running{karpenterInstance("i-k1", "web-abcde", "web")},
			check: func(t *testing.T, p Plan) {
				if len(p.Adopt) != 1 || p.Adopt[0].Phase != state.Launched || p.Adopt[0].NodeClass != "pool-class" || p.Adopt[0].NodeName != "" {
					t.Fatalf("plan %+v", p)
				}
			},
		},
		{
			name: "Nodewright's own, claimed and unconfigured instances",
			instances: []fleet.Running{
				{InstanceID: "i-nw", NodeClaim: "web-nw", NodePool: "web", ManagedBy: true, State: "running"},
				karpenterInstance("i-claimed", "web-claimed", "web"),
				karpenterInstance("i-other", "batch-1", "batch"),
				{InstanceID: "i-plain", State: "running"},
			},
			records: []*state.NodeClaim{{Name: "web-claimed", InstanceID: "i-claimed"}},
			check: func(t *testing.T, p Plan) {
				if len(p.Adopt) != 0 || len(p.Skip) != 1 || p.Skip[0].Instance != "i-other" || p.Skip[0].Reason != NodePoolNotConfigured {
					t.Fatalf("plan %+v", p)
				}
			},
		},
		{
			name: "stopped, name taken, NodeClaim being deleted",
			instances: func() []fleet.Running {
				s := karpenterInstance("i-s", "web-s", "web")
				s.State = "stopped"
				return []fleet.Running{s, karpenterInstance("i-t", "web-t", "web"), karpenterInstance("i-d", "web-d", "web")}
			}(),
			records: []*state.NodeClaim{{Name: "web-t", InstanceID: "i-elsewhere"}},
			objects: func(t *testing.T) []*nodeclaim.NodeClaim {
				d := karpenterNodeClaim(t, "web-d", "web")
				d.DeletionTimestamp = &metav1.Time{Time: now}
				return []*nodeclaim.NodeClaim{d}
			},
			check: func(t *testing.T, p Plan) {
				got := map[string]Reason{}
				for _, s := range p.Skip {
					got[s.Instance] = s.Reason
				}
				if len(p.Adopt) != 1 || p.Adopt[0].InstanceID != "i-d" || got["i-s"] != NotRunning || got["i-t"] != NameTaken || len(got) != 2 {
					t.Fatalf("plan %+v", p)
				}
			},
		},
		{
			name:      "drift Karpenter had seen is carried over",
			instances: []fleet.Running{karpenterInstance("i-k1", "web-abcde", "web")},
			nodes:     []*corev1.Node{readyNode("ip-10-0-1-1", "i-k1", true)},
			objects: func(t *testing.T) []*nodeclaim.NodeClaim {
				return []*nodeclaim.NodeClaim{karpenterNodeClaim(t, "web-abcde", "web", initCond,
					status.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.NewTime(now)})}
			},
			check: func(t *testing.T, p Plan) {
				if len(p.Adopt) != 1 || p.Adopt[0].NodePoolHash != DriftedBeforeAdoption || p.Adopt[0].NodeClassHash != class.Hash() {
					t.Fatalf("plan %+v", p.Adopt)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Records: c.records, Instances: c.instances, Nodes: c.nodes, Pools: pools(),
				Classes: map[string]*apis.EC2NodeClass{"web-class": class}, Now: now,
				Price: func(typ, zone, ct string) float64 {
					if typ == "m5.large" && zone == "us-east-1a" && ct == apis.CapacityTypeSpot {
						return 0.04
					}
					return 0
				}}
			if c.objects != nil {
				in.Objects = c.objects(t)
			}
			c.check(t, Decide(in))
		})
	}
}

func ptr[T any](v T) *T { return &v }
