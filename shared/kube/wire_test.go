package kube

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
)

// filler fills objects at random, every field of every depth (with values
// the protobuf encoding round-trips), so a field a filter drops and its
// trim keeps shows up.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(1, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(int64(c.Intn(1000)), resource.DecimalSI)
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(int64(c.Intn(1<<30)), 0).UTC())
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(int64(c.Intn(1<<30)), 0).UTC())
		},
		func(a *map[string]string, c randfill.Continue) {
			// Annotations and labels: the kept keys sometimes.
			*a = map[string]string{c.String(8): c.String(8)}
			for _, k := range []string{AnnotationDoNotDisrupt, AnnotationMirrorPod, "karpenter.sh/x", "nodewright.io/y"} {
				if c.Bool() {
					(*a)[k] = c.String(4)
				}
			}
		},
		func(t *corev1.PodConditionType, c randfill.Continue) {
			*t = []corev1.PodConditionType{corev1.PodScheduled, corev1.PodReady, corev1.DisruptionTarget, corev1.ContainersReady, "Other"}[c.Intn(5)]
		},
	)
}

type protoObject interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func TestWireFiltersKeepWhatTrimsKeep(t *testing.T) {
	cases := []struct {
		name   string
		filter *wireFilter
		new    func() protoObject
		trim   func(protoObject)
	}{
		{"pod", podFilter, func() protoObject { return &corev1.Pod{} }, func(o protoObject) { TrimPod(o.(*corev1.Pod)) }},
		{"node", nodeFilter, func() protoObject { return &corev1.Node{} }, func(o protoObject) { TrimNode(o.(*corev1.Node)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			smaller := 0
			for seed := int64(0); seed < 300; seed++ {
				in := tc.new()
				filler(seed).Fill(in)
				b, err := in.Marshal()
				if err != nil {
					t.Fatalf("seed %d: marshal: %v", seed, err)
				}
				want := tc.new()
				if err := want.Unmarshal(b); err != nil {
					t.Fatalf("seed %d: unmarshal: %v", seed, err)
				}
				tc.trim(want)
				fb, err := tc.filter.apply(nil, b)
				if err != nil {
					t.Fatalf("seed %d: filter: %v", seed, err)
				}
				if len(fb) < len(b) {
					smaller++
				}
				got := tc.new()
				if err := got.Unmarshal(fb); err != nil {
					t.Fatalf("seed %d: unmarshal the filtered encoding: %v", seed, err)
				}
				tc.trim(got)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d: filtered then trimmed differs from trimmed:\n got %+v\nwant %+v", seed, got, want)
				}
			}
			if smaller < 250 {
				t.Fatalf("the filter shrank %d of 300 encodings: it drops nothing", smaller)
			}
		})
	}
}

func TestWireFilterRejectsMalformed(t *testing.T) {
	b, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], {0x0b}, {0x0a, 0x05, 0x01}, {0x80}} {
		if _, err := podFilter.apply(nil, bad); err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
}

func TestProtobufList(t *testing.T) {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}}
	for i := 0; i < 3; i++ {
		l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i)}})
	}
	raw, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// runtime.Unknown{typeMeta: 1, raw: 2}, after the magic.
	body := append([]byte{}, protobufMagic...)
	body = append(body, 0x0a, 0x00, 0x12)
	body = append(body, protowire.AppendVarint(nil, uint64(len(raw)))...)
	body = append(body, raw...)
	meta, items, err := protobufList(body)
	if err != nil {
		t.Fatal(err)
	}
	var lm metav1.ListMeta
	if err := lm.Unmarshal(meta); err != nil || lm.ResourceVersion != "42" || lm.Continue != "next" {
		t.Fatalf("list meta %+v (%v)", lm, err)
	}
	if len(items) != 3 {
		t.Fatalf("%d items", len(items))
	}
	var p corev1.Pod
	if err := p.Unmarshal(items[2]); err != nil || p.Name != "p2" {
		t.Fatalf("item 2: %q (%v)", p.Name, err)
	}
	if _, _, err := protobufList([]byte(`{"kind":"PodList"}`)); err == nil {
		t.Fatal("JSON taken for protobuf")
	}
}
