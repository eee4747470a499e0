package requirements

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

func TestRequirementsAddAndIntersect(t *testing.T) {
	r := NewRequirements(MustNew("b", opIn, "1", "2"), MustNew("a", opEx), MustNew("b", opNot, "1"))
	if got := r.String(); got != "a Exists; b In [2]" {
		t.Fatalf("NewRequirements = %q", got)
	}
	o := NewRequirements(MustNew("c", opDNE), MustNew("a", opIn, "x"))
	if got := r.Intersect(o).String(); got != "a In [x]; b In [2]; c DoesNotExist" {
		t.Fatalf("Intersect = %q", got)
	}
	if got := o.Intersect(r).String(); got != "a In [x]; b In [2]; c DoesNotExist" {
		t.Fatalf("Intersect reversed = %q", got)
	}
	if _, ok := r.Get("c"); ok {
		t.Fatal("Get(c) found a key r does not have")
	}
	if err := r.Intersect(NewRequirements(MustNew("b", opIn, "3"))).Satisfiable(); err == nil || err.Error() != "no value of b satisfies every requirement on it" {
		t.Fatalf("Satisfiable = %v", err)
	}
}

func TestCompatible(t *testing.T) {
	pool := NewRequirements(
		MustNew(apis.LabelCapacityType, opIn, "spot", "on-demand"),
		MustNew("team", opIn, "a"),
	)
	tests := []struct {
		name string
		pod  Requirements
		want string // "" for compatible
	}{
		{"well-known undefined key is definable", NewRequirements(MustNew(apis.LabelZone, opIn, "us-east-1a")), ""},
		{"shared key intersects", NewRequirements(MustNew(apis.LabelCapacityType, opIn, "spot")), ""},
		{"shared key conflicts", NewRequirements(MustNew(apis.LabelCapacityType, opIn, "reserved")),
			"karpenter.sh/capacity-type In [reserved] conflicts with karpenter.sh/capacity-type In [on-demand spot]"},
		{"custom label the pool doesn't set", NewRequirements(MustNew("gpu", opIn, "true")), `label "gpu" does not have known values`},
		{"custom label may be absent", NewRequirements(MustNew("gpu", opNot, "true")), ""},
		{"DoesNotExist on an undefined custom key", NewRequirements(MustNew("gpu", opDNE)), ""},
		{"custom label the pool sets", NewRequirements(MustNew("team", opIn, "a", "b")), ""},
		{"custom label NotIn the pool's value", NewRequirements(MustNew("team", opNot, "a")), "team NotIn [a] conflicts with team In [a]"},
		{"node name only an existing node has", NewRequirements(MustNew(FieldNodeName, opIn, "n1")), `label "metadata.name" does not have known values`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pool.Compatible(tt.pod, WellKnown)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("Compatible = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMatchesLabels(t *testing.T) {
	r := NewRequirements(MustNew("a", opIn, "1"), MustNew("b", opNot, "x"), MustNew("c", opGt, "3"))
	for _, tt := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"a": "1", "c": "4"}, true},
		{map[string]string{"a": "1", "b": "y", "c": "4"}, true},
		{map[string]string{"a": "1", "b": "x", "c": "4"}, false},
		{map[string]string{"a": "1", "c": "3"}, false},
		{map[string]string{"c": "4"}, false},
	} {
		if got := r.Matches(tt.labels); got != tt.want {
			t.Errorf("Matches(%v) = %v, want %v", tt.labels, got, tt.want)
		}
	}
}

func TestFromNodePool(t *testing.T) {
	three := 3
	np := &apis.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "platform"}
	np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
		{Key: apis.LabelInstanceCategory, Operator: opIn, Values: []string{"c", "m", "r"}, MinValues: &three},
		{Key: apis.LabelInstanceGeneration, Operator: opGt, Values: []string{"2"}},
	}
	r, err := FromNodePool(np)
	if err != nil {
		t.Fatal(err)
	}
	want := "karpenter.k8s.aws/instance-category In [c m r], minValues 3; karpenter.k8s.aws/instance-generation Gt [2]; karpenter.sh/nodepool In [default]; team In [platform]"
	if r.String() != want {
		t.Fatalf("FromNodePool =\n %s\nwant\n %s", r, want)
	}
	np.Spec.Template.Spec.Requirements[1].Values = []string{"two"}
	if _, err := FromNodePool(np); err == nil || err.Error() != `nodepool default: spec.template.spec.requirements[1]: karpenter.k8s.aws/instance-generation Gt "two": not an integer` {
		t.Fatalf("bad Gt value error = %v", err)
	}
}

func TestFromPod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{apis.LabelArch: "arm64"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: apis.LabelZone, Operator: opIn, Values: []string{"us-east-1a"}}}},
				{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: opIn, Values: []string{"node-1"}}}},
				{},
			},
		}}},
	}}
	alts, err := FromPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kubernetes.io/arch In [arm64]; topology.kubernetes.io/zone In [us-east-1a]",
		"kubernetes.io/arch In [arm64]; metadata.name In [node-1]",
		"kubernetes.io/arch In [arm64]; metadata.name In",
	}
	if len(alts) != len(want) {
		t.Fatalf("got %d alternatives, want %d", len(alts), len(want))
	}
	for i := range want {
		if alts[i].String() != want[i] {
			t.Errorf("alternative %d = %q, want %q", i, alts[i], want[i])
		}
	}
	plain, err := FromPod(&corev1.Pod{})
	if err != nil || len(plain) != 1 || len(plain[0]) != 0 {
		t.Fatalf("pod without constraints gives %v, %v", plain, err)
	}
}

func TestNodeSelectorRoundTrip(t *testing.T) {
	// Every requirement converts to node selector requirements that describe
	// the same predicate.
	reqs := []Requirement{
		MustNew("k", opIn, "a", "b"), MustNew("k", opNot, "a"), MustNew("k", opEx), MustNew("k", opDNE),
		MustNew("k", opGt, "1"), MustNew("k", opLt, "9"),
		MustNew("k", opEx).Intersect(MustNew("k", opNot, "a")),
		MustNew("k", opGt, "1").Intersect(MustNew("k", opNot, "5")),
		MustNew("k", opNot, "a").Intersect(MustNew("k", opDNE)),
	}
	for _, r := range reqs {
		back, err := FromNodeSelectorRequirements(r.NodeSelectorRequirements())
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		b, _ := back.Get("k")
		for _, v := range sampleValues {
			if r.Matches(v.value, v.present) != b.Matches(v.value, v.present) {
				t.Errorf("%s and its node selector form %s differ on %+v", r, b, v)
			}
		}
	}
}

// TestNormalizedLabels: a deprecated alias of a well-known label is read as
// the label it means, in every constructor (Karpenter's pkg/scheduling
// requirements_test "should normalize aliased labels", requirement_test
// "should normalize labels").
func TestNormalizedLabels(t *testing.T) {
	_ = []string{"requirements:34", "requirement:67"}
	for alias, stable := range apis.NormalizedLabels {
		t.Run(alias, func(t *testing.T) {
			r := NewRequirements(MustNew(alias, opIn, "v"))
			if _, ok := r.Get(alias); ok {
				t.Errorf("New kept the alias %s", alias)
			}
			if got, ok := r.Get(stable); !ok || !got.Has("v") {
				t.Errorf("New: %v, want %s In [v]", r, stable)
			}
			if got := In(alias, "v"); got.Key != stable {
				t.Errorf("In: key %s, want %s", got.Key, stable)
			}
			both := FromLabels(map[string]string{alias: "v", stable: "v"})
			if len(both) != 1 || both[0].Key != stable {
				t.Errorf("FromLabels with both names: %v, want one requirement on %s", both, stable)
			}
			if err := FromLabels(map[string]string{alias: "v", stable: "w"}).Satisfiable(); err == nil {
				t.Errorf("FromLabels with different values under both names is satisfiable")
			}
		})
	}
}
