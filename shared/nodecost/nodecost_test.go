package nodecost

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

func ptr[T any](v T) *T { return &v }

func class(public *bool, bdms ...*apis.BlockDeviceMapping) *apis.EC2NodeClass {
	return &apis.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Spec: apis.EC2NodeClassSpec{AssociatePublicIPAddress: public, BlockDeviceMappings: bdms}}
}

func bottlerocket() *apis.EC2NodeClass {
	c := class(nil)
	c.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	return c
}

// family is a class of the AMI family with no block device mappings.
func family(f string) *apis.EC2NodeClass {
	c := class(nil)
	c.Spec.AMIFamily = &f
	return c
}

func ebs(typ, size string, iops, mibps int64) *apis.BlockDeviceMapping {
	b := &apis.BlockDevice{VolumeSize: ptr(resource.MustParse(size))}
	if typ != "" {
		b.VolumeType = ptr(typ)
	}
	if iops > 0 {
		b.IOPS = ptr(iops)
	}
	if mibps > 0 {
		b.Throughput = ptr(mibps)
	}
	return &apis.BlockDeviceMapping{DeviceName: ptr("/dev/xvda"), EBS: b}
}

func TestOf(t *testing.T) {
	r, exact := For("us-east-1")
	if !exact || r.AsOf == "" {
		t.Fatalf("For(us-east-1) = exact %v, asOf %q; want the shipped, dated table", exact, r.AsOf)
	}
	month := func(d float64) float64 { return d / HoursPerMonth }
	for _, tc := range []struct {
		name       string
		class      *apis.EC2NodeClass
		mapsPublic bool
		want       Parts
	}{
		{"no class: the default 20 GiB gp3 root", nil, false, Parts{VolumesPerHour: month(20 * 0.08)}},
		{"no mappings: the default root", class(nil), false, Parts{VolumesPerHour: month(1.6)}},
		{"AL2: AL2023's default root", family(apis.AMIFamilyAL2), false, Parts{VolumesPerHour: month(1.6)}},
		{"Bottlerocket: its 4 GiB OS and 20 GiB data volumes", family(apis.AMIFamilyBottlerocket), false, Parts{VolumesPerHour: month(24 * 0.08)}},
		{"Windows: a 50 GiB root", family(apis.AMIFamilyWindows2022), false, Parts{VolumesPerHour: month(50 * 0.08)}},
		{"gp3 at its baseline", class(nil, ebs("gp3", "100Gi", 3000, 125)), false, Parts{VolumesPerHour: month(8)}},
		{"gp3 above the baseline", class(nil, ebs("gp3", "100Gi", 6000, 250)), false,
			Parts{VolumesPerHour: month(8 + 3000*0.005 + 125*0.04)}},
		{"gp2", class(nil, ebs("gp2", "50Gi", 0, 0)), false, Parts{VolumesPerHour: month(5)}},
		{"no type: EC2's default gp2", class(nil, ebs("", "50Gi", 0, 0)), false, Parts{VolumesPerHour: month(5)}},
		{"io2: every IOPS", class(nil, ebs("io2", "10Gi", 1000, 0)), false, Parts{VolumesPerHour: month(1.25 + 65)}},
		{"io1", class(nil, ebs("io1", "10Gi", 100, 0)), false, Parts{VolumesPerHour: month(1.25 + 6.5)}},
		{"st1 and sc1 add up", class(nil, ebs("st1", "1000Gi", 0, 0), ebs("sc1", "1000Gi", 0, 0)), false, Parts{VolumesPerHour: month(45 + 15)}},
		{"size rounds up to a GiB", class(nil, ebs("gp2", "10G", 0, 0)), false, Parts{VolumesPerHour: month(1.0)}},
		{"Bottlerocket's defaults: 4 GiB OS and 20 GiB data, gp3", bottlerocket(), false, Parts{VolumesPerHour: month(24 * 0.08)}},
		{"subnets map public IPv4", class(nil), true, Parts{VolumesPerHour: month(1.6), PublicIPv4PerHour: 0.005}},
		{"the class turns it on", class(ptr(true)), false, Parts{VolumesPerHour: month(1.6), PublicIPv4PerHour: 0.005}},
		{"the class turns it off over the subnets", class(ptr(false)), true, Parts{VolumesPerHour: month(1.6)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Of(tc.class, tc.mapsPublic, r)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.VolumesPerHour-tc.want.VolumesPerHour) > 1e-12 || got.PublicIPv4PerHour != tc.want.PublicIPv4PerHour {
				t.Errorf("Of = %+v, want %+v", got, tc.want)
			}
			if got.PerHour() != got.VolumesPerHour+got.PublicIPv4PerHour {
				t.Errorf("PerHour = %v, not the sum of %+v", got.PerHour(), got)
			}
		})
	}
}

func TestOfRefusesUnknownVolumeType(t *testing.T) {
	r, _ := For("us-east-1")
	_, err := Of(class(nil, ebs("gp9", "10Gi", 0, 0)), false, r)
	if err == nil || !strings.Contains(err.Error(), `"gp9"`) || !strings.Contains(err.Error(), "EC2NodeClass c") {
		t.Fatalf("Of(gp9) error = %v, want one naming the type and the class", err)
	}
}

func TestForOtherRegionFallsBack(t *testing.T) {
	r, exact := For("eu-west-1")
	if exact || r.Region != ShippedRegion {
		t.Fatalf("For(eu-west-1) = %s exact %v, want the shipped region's rates, not exact", r.Region, exact)
	}
}

func TestPerPool(t *testing.T) {
	r, _ := For("us-east-1")
	pool := func(name, class string) *apis.NodePool {
		np := &apis.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if class != "" {
			np.Spec.Template.Spec.NodeClassRef = &apis.NodeClassReference{Name: class}
		}
		return np
	}
	public := class(nil)
	public.Name = "public"
	big := class(nil, ebs("gp3", "200Gi", 0, 0))
	big.Name = "big"
	got, err := PerPool([]*apis.NodePool{pool("a", "public"), pool("b", "big"), pool("c", "missing"), pool("d", "")},
		[]*apis.EC2NodeClass{public, big}, func(c string) bool { return c == "public" }, r)
	if err != nil {
		t.Fatal(err)
	}
	def := 1.6 / HoursPerMonth
	want := map[string]Parts{
		"a": {VolumesPerHour: def, PublicIPv4PerHour: 0.005},
		"b": {VolumesPerHour: 16.0 / HoursPerMonth},
		"c": {VolumesPerHour: def},
		"d": {VolumesPerHour: def},
	}
	for k, w := range want {
		if g := got[k]; math.Abs(g.VolumesPerHour-w.VolumesPerHour) > 1e-12 || g.PublicIPv4PerHour != w.PublicIPv4PerHour {
			t.Errorf("pool %s: %+v, want %+v", k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("PerPool has %d pools, want %d", len(got), len(want))
	}
}

// A NodePool's own per-node cost (licences, agents) is a part of its own,
// added to every node of the pool; a bad value is refused with its path.
func TestPerPoolFixedCost(t *testing.T) {
	r, _ := For("us-east-1")
	np := &apis.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "licensed",
		Annotations: map[string]string{apis.AnnotationNodeCostPerHour: "0.03"}}}
	got, err := PerPool([]*apis.NodePool{np}, nil, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	p := got["licensed"]
	if p.FixedPerHour != 0.03 || math.Abs(p.PerHour()-(0.03+1.6/HoursPerMonth)) > 1e-12 {
		t.Errorf("parts %+v (total %v), want a fixed 0.03 beside the default volume", p, p.PerHour())
	}
	np.Annotations[apis.AnnotationNodeCostPerHour] = "3 USD"
	if _, err := PerPool([]*apis.NodePool{np}, nil, nil, r); err == nil ||
		!strings.Contains(err.Error(), "metadata.annotations[nodewright.io/node-cost-per-hour]") {
		t.Errorf("PerPool with %q: error %v, want one naming the annotation's path", "3 USD", err)
	}
}

func TestLicencePerVCPUHour(t *testing.T) {
	for family, want := range map[string]float64{
		apis.AMIFamilyWindows2019: 0.046, apis.AMIFamilyWindows2022: 0.046, apis.AMIFamilyWindows2025: 0.046,
		apis.AMIFamilyAL2023: 0, apis.AMIFamilyAL2: 0, apis.AMIFamilyBottlerocket: 0, apis.AMIFamilyCustom: 0, "": 0,
	} {
		if got := LicencePerVCPUHour(family); got != want {
			t.Errorf("LicencePerVCPUHour(%q) = %v, want %v", family, got, want)
		}
	}
	// The figure is the m5.large difference it names, over 2 vCPUs.
	if got := (0.188 - 0.096) / 2; math.Abs(got-WindowsLicence.PerVCPUHour) > 1e-9 {
		t.Errorf("licence %v, its source gives %v", WindowsLicence.PerVCPUHour, got)
	}
}
