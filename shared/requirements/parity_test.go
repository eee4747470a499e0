package requirements

// Tests mirroring Karpenter's pkg/scheduling requirement_test.go and
// requirements_test.go (kubernetes-sigs/karpenter v1.14.1), naming the Its
// and DescribeTables they mirror ("requirement:<line>",
// "requirements:<line>"). Karpenter's tables state its own representation
// of results; these check the same cases against the meaning of each
// requirement as a set of label values (and the label's absence), which is
// what a node either satisfies or not.

import (
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// kind is one of Karpenter's test requirements on "key", with its meaning.
type kind struct {
	name    string
	req     Requirement
	allows  func(v string) bool
	absence bool // a node without the label satisfies it
}

func integer(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func kinds() []kind {
	is := func(vs ...string) func(string) bool {
		return func(v string) bool {
			for _, x := range vs {
				if v == x {
					return true
				}
			}
			return false
		}
	}
	not := func(f func(string) bool) func(string) bool { return func(v string) bool { return !f(v) } }
	gt := func(b int64) func(string) bool {
		return func(v string) bool { n, ok := integer(v); return ok && n > b }
	}
	lt := func(b int64) func(string) bool {
		return func(v string) bool { n, ok := integer(v); return ok && n < b }
	}
	return []kind{
		{"exists", MustNew("key", corev1.NodeSelectorOpExists), func(string) bool { return true }, false},
		{"doesNotExist", MustNew("key", corev1.NodeSelectorOpDoesNotExist), func(string) bool { return false }, true},
		{"inA", MustNew("key", opIn, "A"), is("A"), false},
		{"inB", MustNew("key", opIn, "B"), is("B"), false},
		{"inAB", MustNew("key", opIn, "A", "B"), is("A", "B"), false},
		{"notInA", MustNew("key", opNot, "A"), not(is("A")), true},
		{"in1", MustNew("key", opIn, "1"), is("1"), false},
		{"in9", MustNew("key", opIn, "9"), is("9"), false},
		{"in19", MustNew("key", opIn, "1", "9"), is("1", "9"), false},
		{"notIn12", MustNew("key", opNot, "1", "2"), not(is("1", "2")), true},
		{"greaterThan1", MustNew("key", corev1.NodeSelectorOpGt, "1"), gt(1), false},
		{"greaterThan9", MustNew("key", corev1.NodeSelectorOpGt, "9"), gt(9), false},
		{"lessThan1", MustNew("key", corev1.NodeSelectorOpLt, "1"), lt(1), false},
		{"lessThan9", MustNew("key", corev1.NodeSelectorOpLt, "9"), lt(9), false},
	}
}

// values are label values that tell the kinds apart.
var values = []string{"A", "B", "C", "0", "1", "2", "5", "9", "10", "-1", "x9"}

// TestKarpenterHas mirrors requirement:750 (Has): each kind allows exactly
// the values its meaning allows.
func TestKarpenterHas(t *testing.T) {
	_ = "requirement:750"
	for _, k := range kinds() {
		for _, v := range append([]string{"A", "B", "1"}, values...) {
			if got := k.req.Has(v); got != k.allows(v) {
				t.Errorf("%s.Has(%q) = %v, want %v", k.name, v, got, k.allows(v))
			}
		}
	}
}

// TestKarpenterIntersect mirrors the three Intersect tables
// (requirement:104, without minValues; requirement:318, one side with
// minValues; requirement:533, both): for all 196 pairs the intersection
// allows exactly the values (and absence) both allow, and keeps the larger
// minValues.
func TestKarpenterIntersect(t *testing.T) {
	_ = []string{"requirement:104", "requirement:318", "requirement:533"}
	ks := kinds()
	for _, a := range ks {
		for _, b := range ks {
			for _, mins := range [][2]int{{0, 0}, {1, 0}, {2, 3}} {
				ra, rb := a.req, b.req
				if mins[0] > 0 {
					ra.MinValues = &mins[0]
				}
				if mins[1] > 0 {
					rb.MinValues = &mins[1]
				}
				got := ra.Intersect(rb)
				for _, v := range values {
					if want := a.allows(v) && b.allows(v); got.Matches(v, true) != want {
						t.Errorf("%s ∩ %s (minValues %v): value %q allowed %v, want %v", a.name, b.name, mins, v, got.Matches(v, true), want)
					}
				}
				if want := a.absence && b.absence; got.Matches("", false) != want {
					t.Errorf("%s ∩ %s: absence allowed %v, want %v", a.name, b.name, got.Matches("", false), want)
				}
				want := max(mins[0], mins[1])
				if (want == 0) != (got.MinValues == nil) || (got.MinValues != nil && *got.MinValues != want) {
					t.Errorf("%s ∩ %s: minValues %v, want %d", a.name, b.name, got.MinValues, want)
				}
			}
		}
	}
}

// TestKarpenterAny mirrors requirement:876 (Any): a value each kind allows,
// none for DoesNotExist.
func TestKarpenterAny(t *testing.T) {
	_ = "requirement:876"
	for _, k := range kinds() {
		v, ok := k.req.Any()
		if k.name == "doesNotExist" {
			if ok {
				t.Errorf("%s.Any() = %q, want none", k.name, v)
			}
			continue
		}
		if !ok || !k.allows(v) {
			t.Errorf("%s.Any() = %q, %v: not a value it allows", k.name, v, ok)
		}
	}
}

// TestKarpenterCompatible mirrors requirements:57 (compatible with
// well-known labels undefined) and requirements:298 (strictly compatible).
func TestKarpenterCompatible(t *testing.T) {
	_ = []string{"requirements:57", "requirements:298"}
	byName := map[string]Requirements{}
	for _, k := range kinds() {
		r := k.req
		r.Key = apis.LabelZone
		byName[k.name] = NewRequirements(r)
	}
	var unconstrained Requirements
	for name, r := range byName {
		if err := unconstrained.Compatible(r, WellKnown); err != nil {
			t.Errorf("unconstrained vs %s with well-known labels definable: %v", name, err)
		}
	}
	for _, c := range []struct {
		other string
		ok    bool
	}{{"in9", false}, {"in19", true}, {"notIn12", true}, {"greaterThan1", true}, {"greaterThan9", false}, {"lessThan1", true}, {"lessThan9", true}} {
		if err := byName["lessThan9"].Compatible(byName[c.other], WellKnown); (err == nil) != c.ok {
			t.Errorf("lessThan9 vs %s: %v, want compatible %v", c.other, err, c.ok)
		}
	}
	for name, ok := range map[string]bool{"exists": false, "inA": false, "inB": false, "inAB": false, "in1": false, "in9": false, "in19": false,
		"greaterThan1": false, "greaterThan9": false, "lessThan1": false, "doesNotExist": true, "notInA": true} {
		if err := unconstrained.Compatible(byName[name], nil); (err == nil) != ok {
			t.Errorf("strictly, unconstrained vs %s: %v, want compatible %v", name, err, ok)
		}
	}
	for _, other := range []string{"lessThan1", "lessThan9"} {
		if err := byName["lessThan9"].Compatible(byName[other], nil); err != nil {
			t.Errorf("strictly, lessThan9 vs %s: %v", other, err)
		}
	}
}

// TestKarpenterTypos mirrors requirements:545 (truncations),
// requirements:557 (typos) and requirements:568 (unknown labels): the error
// for a label no requirement defines names the well-known label it looks
// like.
func TestKarpenterTypos(t *testing.T) {
	_ = []string{"requirements:545", "requirements:557", "requirements:568"}
	for bad, want := range map[string]string{
		"zone": apis.LabelZone, "region": apis.LabelRegion, "nodepool": apis.LabelNodePool, "instance-type": apis.LabelInstanceType,
		"arch": apis.LabelArch, "capacity-type": apis.LabelCapacityType,
		"topology.kubernetesio/zone": apis.LabelZone, "node.io/zone": apis.LabelZone, "topology.kubernetes.io/regio": apis.LabelRegion,
		"node.kubernetes.io/region": apis.LabelRegion, "karpenter/nodepool": apis.LabelNodePool,
	} {
		err := Requirements(nil).Compatible(NewRequirements(MustNew(bad, corev1.NodeSelectorOpExists)), WellKnown)
		wantMsg := fmt.Sprintf("label %q does not have known values (typo of %q?)", bad, want)
		if err == nil || err.Error() != wantMsg {
			t.Errorf("%s: %v, want %s", bad, err, wantMsg)
		}
	}
	err := Requirements(nil).Compatible(NewRequirements(MustNew("deployment", corev1.NodeSelectorOpExists)), nil)
	if err == nil || err.Error() != `label "deployment" does not have known values` {
		t.Errorf("unknown label: %v", err)
	}
}

// TestKarpenterConversion mirrors requirements:575 and requirements:625
// (conversion to node selector requirements) and requirement:917, where
// Nodewright deliberately differs: In, NotIn, Exists and DoesNotExist
// convert as in Karpenter; bounds stay Gt and Lt (a pool's Gte n is read as
// Gt n-1 and Lte n as Lt n+1, and corev1's node selectors have no Gte or
// Lte) and minValues travel beside the requirements
// (NodeClaim.MinValues), since corev1's type has no field for them.
func TestKarpenterConversion(t *testing.T) {
	_ = []string{"requirements:575", "requirements:625", "requirement:917"}
	want := map[string]string{
		"exists": "key Exists", "doesNotExist": "key DoesNotExist", "inA": "key In [A]", "inB": "key In [B]", "inAB": "key In [A B]",
		"notInA": "key NotIn [A]", "in1": "key In [1]", "in9": "key In [9]", "in19": "key In [1 9]", "notIn12": "key NotIn [1 2]",
		"greaterThan1": "key Gt [1]", "greaterThan9": "key Gt [9]", "lessThan1": "key Lt [1]", "lessThan9": "key Lt [9]",
	}
	for _, k := range kinds() {
		nsr := k.req.NodeSelectorRequirements()
		if len(nsr) != 1 {
			t.Errorf("%s: %d node selector requirements", k.name, len(nsr))
			continue
		}
		got := fmt.Sprintf("%s %s", nsr[0].Key, nsr[0].Operator)
		if len(nsr[0].Values) > 0 {
			got += fmt.Sprint(" ", nsr[0].Values)
		}
		if got != want[k.name] {
			t.Errorf("%s: %s, want %s", k.name, got, want[k.name])
		}
	}
}

// TestKarpenterStringOrder mirrors requirements:688: Requirements print in
// key order whatever order they were added in.
func TestKarpenterStringOrder(t *testing.T) {
	_ = "requirements:688"
	a := NewRequirements(MustNew("b", opIn, "1"), MustNew("a", opIn, "2"), MustNew("c", corev1.NodeSelectorOpExists))
	b := NewRequirements(MustNew("c", corev1.NodeSelectorOpExists), MustNew("a", opIn, "2"), MustNew("b", opIn, "1"))
	if a.String() != b.String() || a.String() != "a In [2]; b In [1]; c Exists" {
		t.Errorf("%q vs %q", a.String(), b.String())
	}
}
