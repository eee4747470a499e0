package scheduling

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
)

func smokePool(name string, reqs ...apis.NodeSelectorRequirementWithMinValues) *apis.NodePool {
	np := &apis.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.Requirements = reqs
	np.Spec.Template.Spec.NodeClassRef = &apis.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	return np
}

func smokePod(name, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func synthetic(n int) []*catalog.InstanceType {
	var out []*catalog.InstanceType
	for i := 0; i < n; i++ {
		out = append(out, &catalog.InstanceType{Name: fmt.Sprintf("fake-it-%03d", i), Family: "fake", Category: "f", Generation: 1,
			Size: fmt.Sprint(i), Arch: "amd64", OS: "linux", VCPU: i + 1, MemoryMiB: int64(2*(i+1)) * 1024,
			ENIs: 1, IPv4PerENI: 10*(i+1) - 1, OnDemandPrice: 0.025*float64(i+1) + 0.001*float64(2*(i+1))})
	}
	return out
}

type spot07 struct{}

func (spot07) SpotPrice(string, string) (float64, bool) { return 0, false }

func diverse(n int) []*corev1.Pod {
	rng := rand.New(rand.NewPCG(42, 42))
	cpus := []string{"100m", "250m", "500m", "1", "1500m"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	var pods []*corev1.Pod
	for kind := 0; kind < 5; kind++ {
		for i := 0; i < n/5; i++ {
			p := smokePod(fmt.Sprintf("p%d-%05d", kind, i), cpus[rng.IntN(5)], mems[rng.IntN(6)])
			lbl := map[string]string{}
			sel := func() *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: lbl} }
			switch kind {
			case 1:
				lbl["my-label"] = "zspread"
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: apis.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel()}}
			case 2:
				lbl["my-label"] = "hspread"
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: apis.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel()}}
			case 3:
				lbl["my-affinity"] = "zaff"
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: apis.LabelZone, LabelSelector: sel()}}}}
			case 4:
				lbl["app"] = "nginx"
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: apis.LabelHostname, LabelSelector: sel()}}}}
			}
			p.Labels = lbl
			pods = append(pods, p)
		}
	}
	return pods
}

func TestSmokeOnePod(t *testing.T) {
	res, err := Solve(Input{Pods: []*corev1.Pod{smokePod("a", "250m", "64Mi")},
		NodePools:     []*apis.NodePool{smokePool("default", apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelCapacityType, Operator: "In", Values: []string{"on-demand"}})},
		InstanceTypes: catalog.Default().Types(), Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(res, "", " ")
	t.Logf("%s", b[:min(len(b), 3000)])
}

func TestSmokeDiverse(t *testing.T) {
	for _, n := range []int{1000, 10000, 20000} {
		for _, real := range []bool{false, true} {
			in := Input{Pods: diverse(n), NodePools: []*apis.NodePool{smokePool("default")}, Zones: []string{"a", "b", "c"}}
			if real {
				in.InstanceTypes = catalog.Default().Types()
				in.Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}
				in.Spot = pricing.Model{Catalog: catalog.Default()}
				in.NodePools = []*apis.NodePool{smokePool("default",
					apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceCategory, Operator: "In", Values: []string{"c", "m", "r"}},
					apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceSize, Operator: "In", Values: []string{"medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge"}})}
			} else {
				in.InstanceTypes = synthetic(400)
			}
			start, cpu0 := time.Now(), cpuTime()
			res, err := Solve(in)
			cpu := cpuTime() - cpu0
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("n=%d real=%v: %v (cpu %v), claims=%d unsched=%d price=%.3f lb=%.3f ratio=%.3f", n, real, time.Since(start), cpu, len(res.NodeClaims), len(res.Unschedulable), res.PricePerHour, res.LowerBoundPricePerHour, res.PricePerHour/res.LowerBoundPricePerHour)
			if len(res.Unschedulable) > 0 {
				t.Logf("first unschedulable: %+v", res.Unschedulable[0])
			}
		}
	}
}
