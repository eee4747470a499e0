package requirements

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

const (
	opIn  = corev1.NodeSelectorOpIn
	opNot = corev1.NodeSelectorOpNotIn
	opEx  = corev1.NodeSelectorOpExists
	opDNE = corev1.NodeSelectorOpDoesNotExist
	opGt  = corev1.NodeSelectorOpGt
	opLt  = corev1.NodeSelectorOpLt
	opGte = apis.NodeSelectorOpGte
	opLte = apis.NodeSelectorOpLte
)

func TestRequirementMatches(t *testing.T) {
	tests := []struct {
		op      corev1.NodeSelectorOperator
		values  []string
		value   string
		present bool
		want    bool
	}{
		{opIn, []string{"a", "b"}, "a", true, true},
		{opIn, []string{"a", "b"}, "c", true, false},
		{opIn, []string{"a"}, "", false, false},
		{opNot, []string{"a"}, "a", true, false},
		{opNot, []string{"a"}, "b", true, true},
		{opNot, []string{"a"}, "", false, true},
		{opEx, nil, "x", true, true},
		{opEx, nil, "", false, false},
		{opDNE, nil, "x", true, false},
		{opDNE, nil, "", false, true},
		{opGt, []string{"2"}, "3", true, true},
		{opGt, []string{"2"}, "2", true, false},
		{opGt, []string{"2"}, "x", true, false},
		{opGt, []string{"2"}, "", false, false},
		{opLt, []string{"4"}, "3", true, true},
		{opLt, []string{"4"}, "4", true, false},
		{opLt, []string{"4"}, "-10", true, true},
		// Gte and Lte (Karpenter v1.14) include their bound.
		{opGte, []string{"2"}, "2", true, true},
		{opGte, []string{"2"}, "3", true, true},
		{opGte, []string{"2"}, "1", true, false},
		{opGte, []string{"2"}, "x", true, false},
		{opGte, []string{"2"}, "", false, false},
		{opGte, []string{"0"}, "0", true, true},
		{opLte, []string{"4"}, "4", true, true},
		{opLte, []string{"4"}, "5", true, false},
		{opLte, []string{"4"}, "0", true, true},
		{opLte, []string{"4"}, "", false, false},
		{opLte, []string{"9223372036854775807"}, "9223372036854775807", true, true},
	}
	for _, tt := range tests {
		r := MustNew("k", tt.op, tt.values...)
		if got := r.Matches(tt.value, tt.present); got != tt.want {
			t.Errorf("k %s %v matches (%q, present %v) = %v, want %v", tt.op, tt.values, tt.value, tt.present, got, tt.want)
		}
	}
}

func TestNewRejectsBadBounds(t *testing.T) {
	for _, c := range []struct {
		op     corev1.NodeSelectorOperator
		values []string
		want   string
	}{
		{opGt, []string{"x"}, `k Gt "x": not an integer`},
		{opLt, []string{"1", "2"}, "k Lt needs exactly one integer value, got 2"},
		{opGte, []string{"x"}, `k Gte "x": not an integer`},
		{opLte, nil, "k Lte needs exactly one integer value, got 0"},
		{"Ge", []string{"1"}, `k: unknown operator "Ge"`},
	} {
		_, err := New("k", c.op, c.values...)
		if err == nil || err.Error() != c.want {
			t.Errorf("New(k %s %v) error = %v, want %q", c.op, c.values, err, c.want)
		}
	}
}

func TestIntersect(t *testing.T) {
	tests := []struct {
		a, b Requirement
		want string // String() of the intersection
		sat  bool
	}{
		{MustNew("k", opIn, "a", "b"), MustNew("k", opIn, "b", "c"), "k In [b]", true},
		{MustNew("k", opIn, "a"), MustNew("k", opIn, "b"), "k In", false},
		{MustNew("k", opIn, "a", "b"), MustNew("k", opNot, "a"), "k In [b]", true},
		{MustNew("k", opNot, "a"), MustNew("k", opNot, "b"), "k NotIn [a b]", true},
		{MustNew("k", opNot, "a"), MustNew("k", opDNE), "k DoesNotExist", true},
		{MustNew("k", opIn, "a"), MustNew("k", opDNE), "k In", false},
		{MustNew("k", opEx), MustNew("k", opNot, "a"), "k NotIn [a], k Exists", true},
		{MustNew("k", opGt, "2"), MustNew("k", opLt, "5"), "k Gt [2], k Lt [5]", true},
		{MustNew("k", opGt, "2"), MustNew("k", opLt, "3"), "k In", false},
		{MustNew("k", opGt, "2"), MustNew("k", opIn, "1", "3", "x"), "k In [3]", true},
		{MustNew("k", opGt, "1"), MustNew("k", opNot, "2"), "k NotIn [2], k Gt [1]", true},
		{MustNew("k", opGt, "1").Intersect(MustNew("k", opLt, "4")), MustNew("k", opNot, "2", "3"), "k In", false},
		{MustNew("k", opDNE), MustNew("k", opDNE), "k DoesNotExist", true},
		{MustNew("k", opNot), MustNew("k", opNot), "", true},
		// Gte n is Gt n-1 and Lte n is Lt n+1: [3, 3] holds 3 alone.
		{MustNew("k", opGte, "3"), MustNew("k", opLte, "3"), "k Gt [2], k Lt [4]", true},
		{MustNew("k", opGte, "3"), MustNew("k", opLt, "3"), "k In", false},
		{MustNew("k", opGte, "3"), MustNew("k", opIn, "2", "3"), "k In [3]", true},
		{MustNew("k", opLte, "2"), MustNew("k", opIn, "2", "3"), "k In [2]", true},
	}
	for _, tt := range tests {
		got := tt.a.Intersect(tt.b)
		if got.String() != tt.want || got.Satisfiable() != tt.sat {
			t.Errorf("(%s) ∩ (%s) = %q satisfiable %v, want %q satisfiable %v", tt.a, tt.b, got, got.Satisfiable(), tt.want, tt.sat)
		}
	}
}

func TestMinValuesKeepsTheLarger(t *testing.T) {
	a, b := MustNew("k", opIn, "a", "b", "c"), MustNew("k", opExists())
	two, three := 2, 3
	a.MinValues, b.MinValues = &two, &three
	if got := a.Intersect(b).MinValues; got == nil || *got != 3 {
		t.Fatalf("minValues = %v, want 3", got)
	}
	if got := b.Intersect(a).MinValues; got == nil || *got != 3 {
		t.Fatalf("minValues = %v, want 3", got)
	}
	if !strings.Contains(a.String(), "minValues 2") {
		t.Fatalf("String() = %q lacks minValues", a.String())
	}
}

func opExists() corev1.NodeSelectorOperator { return opEx }
