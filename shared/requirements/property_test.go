package requirements

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

type sample struct {
	value   string
	present bool
}

// sampleValues covers every value a generated requirement mentions, values it
// doesn't, integers around the bounds, and the label's absence.
var sampleValues = func() []sample {
	out := []sample{{"", false}}
	for _, v := range []string{"a", "b", "c", "d", "x", "-1", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"} {
		out = append(out, sample{v, true})
	}
	return out
}()

var ops = []corev1.NodeSelectorOperator{opIn, opNot, opEx, opDNE, opGt, opLt}

// randomRequirement draws a requirement on key from a small universe, so that
// intersections often overlap, exclude or empty each other.
func randomRequirement(rng *rand.Rand, key string) Requirement {
	universe := []string{"a", "b", "c", "d", "0", "1", "2", "3", "5", "8", "10"}
	op := ops[rng.IntN(len(ops))]
	var values []string
	switch op {
	case opIn, opNot:
		for range rng.IntN(4) {
			values = append(values, universe[rng.IntN(len(universe))])
		}
	case opGt, opLt:
		values = []string{[]string{"-1", "0", "2", "3", "5", "9"}[rng.IntN(6)]}
	}
	r := MustNew(key, op, values...)
	if rng.IntN(4) == 0 {
		n := 1 + rng.IntN(3)
		r.MinValues = &n
	}
	return r
}

func checkIntersection(t *testing.T, a, b Requirement) {
	t.Helper()
	ab, ba := a.Intersect(b), b.Intersect(a)
	if ab.String() != ba.String() {
		t.Fatalf("not commutative: (%s)∩(%s) = %q but reversed = %q", a, b, ab, ba)
	}
	anyMatch := false
	for _, s := range sampleValues {
		want := a.Matches(s.value, s.present) && b.Matches(s.value, s.present)
		if got := ab.Matches(s.value, s.present); got != want {
			t.Fatalf("(%s)∩(%s) = %s matches %+v: %v, but A and B: %v", a, b, ab, s, got, want)
		}
		anyMatch = anyMatch || want
	}
	if anyMatch && !ab.Satisfiable() {
		t.Fatalf("(%s)∩(%s) = %s says unsatisfiable but a sample satisfies it", a, b, ab)
	}
}

func TestIntersectionProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkIntersection(t, randomRequirement(rng, "k"), randomRequirement(rng, "k"))
	}
}

func FuzzIntersection(f *testing.F) {
	for i := range uint64(8) {
		f.Add(i, i*7+1)
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		rng := rand.New(rand.NewPCG(s1, s2))
		checkIntersection(t, randomRequirement(rng, "k"), randomRequirement(rng, "k"))
	})
}

// TestInstanceTypeSatisfiesIntersection checks, over the real catalog, that a
// type satisfies A∩B exactly when it satisfies A and B, for random A and B over
// well-known instance labels.
func TestInstanceTypeSatisfiesIntersection(t *testing.T) {
	types := catalog.Default().Types()
	labels := make([]map[string]string, len(types))
	for i, it := range types {
		labels[i] = it.Labels()
	}
	keyValues := map[string][]string{
		apis.LabelInstanceCategory:   {"c", "m", "r", "t", "g", "p", "x"},
		apis.LabelInstanceGeneration: {"2", "3", "4", "5", "6", "7", "8"},
		apis.LabelInstanceCPU:        {"1", "2", "4", "8", "16", "64"},
		apis.LabelArch:               {"amd64", "arm64"},
		apis.LabelInstanceGPUCount:   {"0", "1", "4", "8"},
		apis.LabelInstanceSize:       {"medium", "large", "xlarge", "metal"},
	}
	keys := []string{apis.LabelInstanceCategory, apis.LabelInstanceGeneration, apis.LabelInstanceCPU, apis.LabelArch, apis.LabelInstanceGPUCount, apis.LabelInstanceSize}
	rng := rand.New(rand.NewPCG(3, 4))
	randomSet := func() Requirements {
		var r Requirements
		for range 1 + rng.IntN(3) {
			key := keys[rng.IntN(len(keys))]
			vals := keyValues[key]
			op := ops[rng.IntN(len(ops))]
			var v []string
			switch op {
			case opIn, opNot:
				for range 1 + rng.IntN(3) {
					v = append(v, vals[rng.IntN(len(vals))])
				}
			case opGt, opLt:
				v = []string{[]string{"0", "1", "2", "4", "6", "16"}[rng.IntN(6)]}
			}
			r = r.Add(MustNew(key, op, v...))
		}
		return r
	}
	for range 300 {
		a, b := randomSet(), randomSet()
		ab, ba := a.Intersect(b), b.Intersect(a)
		if ab.String() != ba.String() {
			t.Fatalf("not commutative: %q vs %q", ab, ba)
		}
		for i, l := range labels {
			if got, want := ab.Matches(l), a.Matches(l) && b.Matches(l); got != want {
				t.Fatalf("%s: satisfies A∩B (%s) = %v, A (%s) and B (%s) = %v", types[i].Name, ab, got, a, b, want)
			}
		}
	}
}
