package overlay

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// spotTable prices spot at a fixed share of on-demand, per type.
type spotTable map[string]float64

func (s spotTable) SpotPrice(instanceType, _ string) (float64, bool) {
	p, ok := s[instanceType]
	return p, ok
}

func testCatalog() *catalog.Catalog {
	return catalog.New([]catalog.InstanceType{
		{Name: "c5.large", Family: "c5", Category: "c", Generation: 5, Size: "large", Arch: "amd64", OS: "linux", VCPU: 2, MemoryMiB: 4096, OnDemandPrice: 0.085},
		{Name: "m5.large", Family: "m5", Category: "m", Generation: 5, Size: "large", Arch: "amd64", OS: "linux", VCPU: 2, MemoryMiB: 8192, OnDemandPrice: 0.096},
		{Name: "m5.xlarge", Family: "m5", Category: "m", Generation: 5, Size: "xlarge", Arch: "amd64", OS: "linux", VCPU: 4, MemoryMiB: 16384, OnDemandPrice: 0.192},
		{Name: "m6g.large", Family: "m6g", Category: "m", Generation: 6, Size: "large", Arch: "arm64", OS: "linux", VCPU: 2, MemoryMiB: 8192},
	})
}

func ptr[T any](v T) *T { return &v }

func ov(name string, weight int32, price, adjustment string, reqs ...corev1.NodeSelectorRequirement) *apis.NodeOverlay {
	o := &apis.NodeOverlay{}
	o.Name = name
	if weight != 0 {
		o.Spec.Weight = ptr(weight)
	}
	if price != "" {
		o.Spec.Price = ptr(price)
	}
	if adjustment != "" {
		o.Spec.PriceAdjustment = ptr(adjustment)
	}
	o.Spec.Requirements = reqs
	return o
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// prices lists "type od spot" for every type, as the result prices them.
func prices(r Result) []string {
	var out []string
	for _, it := range r.Types {
		s := "-"
		if r.Spot != nil {
			if p, ok := r.Spot.SpotPrice(it.Name, "us-east-1a"); ok {
				s = fmt.Sprint(p)
			}
		}
		out = append(out, fmt.Sprintf("%s %v %s", it.Name, it.OnDemandPrice, s))
	}
	return out
}

// Each NodeOverlay field changes the prices of the offerings it selects,
// and only those (cases named by the field they exercise).
func TestApply(t *testing.T) {
	family := apis.LabelInstanceFamily
	spot := spotTable{"c5.large": 0.03, "m5.large": 0.04, "m5.xlarge": 0.08}
	unchanged := []string{"c5.large 0.085 0.03", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0 -"}
	cases := []struct {
		name      string
		overlays  []*apis.NodeOverlay
		want      []string
		conflicts []string
	}{
		{"no overlay", nil, unchanged, nil},
		{"spec.price", []*apis.NodeOverlay{ov("flat", 0, "0.05", "", req(family, corev1.NodeSelectorOpIn, "m5"))},
			[]string{"c5.large 0.085 0.03", "m5.large 0.05 0.05", "m5.xlarge 0.05 0.05", "m6g.large 0 -"}, nil},
		{"spec.price on an unpriced type offers it", []*apis.NodeOverlay{ov("preview", 0, "0.07", "", req(apis.LabelInstanceType, corev1.NodeSelectorOpIn, "m6g.large"))},
			[]string{"c5.large 0.085 0.03", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0.07 -"}, nil},
		{"spec.priceAdjustment", []*apis.NodeOverlay{ov("savings", 0, "", "-10%", req(apis.LabelCapacityType, corev1.NodeSelectorOpIn, "on-demand"))},
			[]string{"c5.large 0.0765 0.03", "m5.large 0.0864 0.04", "m5.xlarge 0.1728 0.08", "m6g.large 0 -"}, nil},
		{"absolute adjustment on spot", []*apis.NodeOverlay{ov("agent", 0, "", "+0.01", req(apis.LabelCapacityType, corev1.NodeSelectorOpIn, "spot"))},
			[]string{"c5.large 0.085 0.04", "m5.large 0.096 0.05", "m5.xlarge 0.192 0.09", "m6g.large 0 -"}, nil},
		{"-100% leaves the least price", []*apis.NodeOverlay{ov("free", 0, "", "-100%", req(apis.LabelInstanceType, corev1.NodeSelectorOpIn, "c5.large"))},
			[]string{"c5.large 1e-06 1e-06", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0 -"}, nil},
		{"spec.requirements[].key", []*apis.NodeOverlay{ov("arm", 0, "0.01", "", req(apis.LabelArch, corev1.NodeSelectorOpIn, "arm64"))},
			[]string{"c5.large 0.085 0.03", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0.01 -"}, nil},
		{"spec.requirements[].values", []*apis.NodeOverlay{ov("c", 0, "0.5", "", req(family, corev1.NodeSelectorOpIn, "c5", "m6g"))},
			[]string{"c5.large 0.5 0.5", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0.5 -"}, nil},
		{"spec.requirements[].operator=In", []*apis.NodeOverlay{ov("o", 0, "0.5", "", req(apis.LabelInstanceSize, corev1.NodeSelectorOpIn, "xlarge"))},
			[]string{"c5.large 0.085 0.03", "m5.large 0.096 0.04", "m5.xlarge 0.5 0.5", "m6g.large 0 -"}, nil},
		{"spec.requirements[].operator=NotIn", []*apis.NodeOverlay{ov("o", 0, "0.5", "", req(family, corev1.NodeSelectorOpNotIn, "m5", "m6g"))},
			[]string{"c5.large 0.5 0.5", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0 -"}, nil},
		{"spec.requirements[].operator=Exists", []*apis.NodeOverlay{ov("o", 0, "", "+1", req(apis.LabelCapacityType, corev1.NodeSelectorOpIn, "spot"), req(family, corev1.NodeSelectorOpExists))},
			[]string{"c5.large 0.085 1.03", "m5.large 0.096 1.04", "m5.xlarge 0.192 1.08", "m6g.large 0 -"}, nil},
		{"spec.requirements[].operator=DoesNotExist", []*apis.NodeOverlay{ov("o", 0, "0.5", "", req(apis.LabelInstanceGPUName, corev1.NodeSelectorOpDoesNotExist), req(family, corev1.NodeSelectorOpIn, "c5"))},
			[]string{"c5.large 0.5 0.5", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0 -"}, nil},
		{"spec.requirements[].operator=Gt", []*apis.NodeOverlay{ov("o", 0, "0.5", "", req(apis.LabelInstanceCPU, corev1.NodeSelectorOpGt, "2"))},
			[]string{"c5.large 0.085 0.03", "m5.large 0.096 0.04", "m5.xlarge 0.5 0.5", "m6g.large 0 -"}, nil},
		{"spec.requirements[].operator=Lt", []*apis.NodeOverlay{ov("o", 0, "0.5", "", req(apis.LabelInstanceMemory, corev1.NodeSelectorOpLt, "8192"))},
			[]string{"c5.large 0.5 0.5", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0 -"}, nil},
		{"spec.requirements[].operator=Gte", []*apis.NodeOverlay{ov("o", 0, "0.5", "", req(apis.LabelInstanceCPU, apis.NodeSelectorOpGte, "4"))},
			[]string{"c5.large 0.085 0.03", "m5.large 0.096 0.04", "m5.xlarge 0.5 0.5", "m6g.large 0 -"}, nil},
		{"spec.requirements[].operator=Lte", []*apis.NodeOverlay{ov("o", 0, "0.5", "", req(apis.LabelInstanceMemory, apis.NodeSelectorOpLte, "4096"))},
			[]string{"c5.large 0.5 0.5", "m5.large 0.096 0.04", "m5.xlarge 0.192 0.08", "m6g.large 0 -"}, nil},
		{"requirement matching nothing", []*apis.NodeOverlay{ov("o", 0, "0.5", "", req(family, corev1.NodeSelectorOpIn, "p5"))}, unchanged, nil},
		{"spec.weight", []*apis.NodeOverlay{
			ov("a-all", 1, "", "-50%"),
			ov("b-m5", 10, "1", "", req(family, corev1.NodeSelectorOpIn, "m5")),
		}, []string{"c5.large 0.0425 0.015", "m5.large 1 1", "m5.xlarge 1 1", "m6g.large 0 -"}, nil},
		{"equal weights overlapping: the later name wins, the other is not applied", []*apis.NodeOverlay{
			ov("a", 5, "1", "", req(family, corev1.NodeSelectorOpIn, "m5", "c5")),
			ov("b", 5, "2", "", req(family, corev1.NodeSelectorOpIn, "m5")),
		}, []string{"c5.large 0.085 0.03", "m5.large 2 2", "m5.xlarge 2 2", "m6g.large 0 -"},
			[]string{"NodeOverlay a is not applied: it conflicts with NodeOverlay b (both weight 5) on m5.large on-demand"}},
		{"overlay without a price changes nothing", []*apis.NodeOverlay{ov("o", 0, "", "")}, unchanged, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cat := testCatalog()
			before := prices(Result{Types: cat.Types(), Spot: spot})
			r := Apply(cat.Types(), spot, tc.overlays)
			if got := prices(r); !slices.Equal(got, tc.want) {
				t.Errorf("prices\n got %q\nwant %q", got, tc.want)
			}
			types := r.Types
			if types == nil {
				types = cat.Types()
			}
			for i, it := range types {
				if tc.want[i] == "m6g.large 0 -" {
					continue // not sold either way: in no claim
				}
				if want := tc.want[i] != unchanged[i]; it.PriceOverlaid != want {
					t.Errorf("%s: PriceOverlaid %v, want %v (the fleet launches by the solve's order when set)", it.Name, it.PriceOverlaid, want)
				}
			}
			var conflicts []string
			for _, c := range r.Conflicts {
				conflicts = append(conflicts, c.String())
			}
			if !slices.Equal(conflicts, tc.conflicts) {
				t.Errorf("conflicts %q, want %q", conflicts, tc.conflicts)
			}
			if after := prices(Result{Types: cat.Types(), Spot: spot}); !slices.Equal(before, after) {
				t.Errorf("the input changed: %q", after)
			}
			c2, r2 := ApplyCatalog(cat, spot, tc.overlays)
			if got := prices(Result{Types: c2.Types(), Spot: r2.Spot}); !slices.Equal(got, tc.want) {
				t.Errorf("ApplyCatalog prices %q", got)
			}
		})
	}
}

// An overlay's capacity adds extended resources to the types it selects;
// the heaviest overlay sets each resource, lighter ones add the others,
// and one of equal weight setting the same resource conflicts.
func TestApplyCapacity(t *testing.T) {
	family := apis.LabelInstanceFamily
	sized := func(name string, weight int32, rl corev1.ResourceList, reqs ...corev1.NodeSelectorRequirement) *apis.NodeOverlay {
		o := ov(name, weight, "", "", reqs...)
		o.Spec.Capacity = rl
		return o
	}
	pages := func(q string) corev1.ResourceList { return corev1.ResourceList{"hugepages-2Mi": resource.MustParse(q)} }
	cases := []struct {
		name      string
		overlays  []*apis.NodeOverlay
		want      map[string]string
		conflicts []string
	}{
		{"spec.capacity", []*apis.NodeOverlay{sized("pages", 0, pages("1Gi"), req(family, corev1.NodeSelectorOpIn, "m5"))},
			map[string]string{"m5.large": "hugepages-2Mi=1Gi", "m5.xlarge": "hugepages-2Mi=1Gi"}, nil},
		{"requirement matching nothing", []*apis.NodeOverlay{sized("pages", 0, pages("1Gi"), req(family, corev1.NodeSelectorOpIn, "p5"))}, nil, nil},
		{"weights: the heaviest sets a resource, lighter ones add others", []*apis.NodeOverlay{
			sized("a-all", 1, corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi"), "example.com/fpga": resource.MustParse("1")}),
			sized("b-m5", 10, pages("2Gi"), req(family, corev1.NodeSelectorOpIn, "m5")),
		}, map[string]string{
			"c5.large": "example.com/fpga=1 hugepages-2Mi=1Gi", "m5.large": "example.com/fpga=1 hugepages-2Mi=2Gi",
			"m5.xlarge": "example.com/fpga=1 hugepages-2Mi=2Gi", "m6g.large": "example.com/fpga=1 hugepages-2Mi=1Gi",
		}, nil},
		{"equal weights on one resource conflict", []*apis.NodeOverlay{
			sized("a", 3, pages("1Gi"), req(family, corev1.NodeSelectorOpIn, "c5")),
			sized("b", 3, pages("2Gi"), req(family, corev1.NodeSelectorOpIn, "c5", "m5")),
		}, map[string]string{"c5.large": "hugepages-2Mi=2Gi", "m5.large": "hugepages-2Mi=2Gi", "m5.xlarge": "hugepages-2Mi=2Gi"},
			[]string{"NodeOverlay a is not applied: it conflicts with NodeOverlay b (both weight 3) on c5.large capacity hugepages-2Mi"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Apply(testCatalog().Types(), nil, tc.overlays)
			got := map[string]string{}
			for name, rl := range r.Capacity {
				var parts []string
				for _, k := range slices.Sorted(maps.Keys(rl)) {
					q := rl[k]
					parts = append(parts, string(k)+"="+q.String())
				}
				got[name] = strings.Join(parts, " ")
			}
			if len(tc.want) == 0 && len(got) == 0 {
				got = nil
			}
			if !maps.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("capacity %v, want %v", got, tc.want)
			}
			var conflicts []string
			for _, c := range r.Conflicts {
				conflicts = append(conflicts, c.String())
			}
			if !slices.Equal(conflicts, tc.conflicts) {
				t.Errorf("conflicts %q, want %q", conflicts, tc.conflicts)
			}
		})
	}
}

func TestAdjusted(t *testing.T) {
	for _, tc := range []struct {
		price  float64
		change string
		want   float64
	}{
		{0.1, "", 0.1}, {0.1, "0.3", 0.3}, {0.1, "0", MinPrice}, {0.1, "+0.05", 0.15}, {0.1, "-0.5", MinPrice},
		{0.1, "+10%", 0.11}, {0.1, "-15%", 0.085}, {0, "+1", 0}, {0, "2", 2},
	} {
		if got := Adjusted(tc.price, tc.change); got != tc.want {
			t.Errorf("Adjusted(%v, %q) = %v, want %v", tc.price, tc.change, got, tc.want)
		}
	}
}
