package scheduling_test

// Scenarios mirroring the planner's Its of Karpenter's AWS provider
// pkg/providers/instancetype suite_test.go (v1.14.1), on the real catalog,
// "aws/instancetype:<line>". The catalog's overhead Its are mirrored in
// package catalog.

import (
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

func awsParity() []scenario {
	od := func(extra ...apis.NodeSelectorRequirementWithMinValues) opt {
		return pools(pool("default", 0, append([]apis.NodeSelectorRequirementWithMinValues{req(ctKey, opIn, onDemand)}, extra...)...))
	}
	both := func(extra ...apis.NodeSelectorRequirementWithMinValues) opt {
		return pools(pool("default", 0, append([]apis.NodeSelectorRequirementWithMinValues{req(ctKey, opIn, onDemand, spot)}, extra...)...))
	}
	// The labels of g4dn.8xlarge and inf2.xlarge that the catalog, zones
	// and capacity types define, under both names where an alias exists.
	g4dn := map[string]string{
		poolKey: "default", apis.LabelRegion: "us-east-1", zoneKey: zoneA, typeKey: "g4dn.8xlarge", osKey: "linux", archKey: amd64, ctKey: onDemand,
		apis.LabelInstanceTenancy: "default", apis.LabelInstanceHypervisor: "nitro", apis.LabelInstanceEncryptionInTransit: "true",
		categoryKey: "g", apis.LabelInstanceCapabilityFlex: "false", apis.LabelInstanceGeneration: "4", familyKey: "g4dn", apis.LabelInstanceSize: "8xlarge",
		apis.LabelInstanceCPU: "32", apis.LabelInstanceCPUManufacturer: "intel", apis.LabelInstanceMemory: "131072", apis.LabelInstanceEBSBandwidth: "9500",
		apis.LabelInstanceNetworkBandwidth: "50000", apis.LabelInstanceGPUName: "t4", apis.LabelInstanceGPUManufacturer: "nvidia", apis.LabelInstanceGPUCount: "1",
		apis.LabelInstanceGPUMemory: "16384", apis.LabelInstanceLocalNVME: "900",
		betaRegion: "us-east-1", betaZone: zoneA, betaArch: amd64, betaOS: "linux", betaType: "g4dn.8xlarge",
	}
	inf2 := map[string]string{
		typeKey: "inf2.xlarge", familyKey: "inf2", categoryKey: "inf", apis.LabelInstanceAcceleratorName: "inferentia2",
		apis.LabelInstanceAcceleratorManufacturer: "aws", apis.LabelInstanceAcceleratorCount: "1", apis.LabelInstanceCPUManufacturer: "amd",
	}
	var out []scenario
	for k, v := range g4dn {
		// Karpenter aws/instancetype:223: "should support individual instance type labels"
		out = append(out, scenario{mirrors: []string{"aws/instancetype:223"}, name: "K≠: a node selector on " + k + " alone schedules",
			in: input(realCatalog(), od(), pods(pod(po{Name: "p", NodeSelector: labels(k, v)}))), want: []check{claims(1), allScheduled()}})
	}
	noMetal := func(it *catalog.InstanceType) bool { return !strings.Contains(it.Size, "metal") }
	noGPU := func(it *catalog.InstanceType) bool { return it.GPU.Count == 0 }
	out = append(out, []scenario{
		// Karpenter aws/instancetype:290: "should support combined instance type labels"
		{mirrors: []string{"aws/instancetype:290"}, name: "K≠: node selectors on every label of g4dn.8xlarge together schedule on it",
			in: input(realCatalog(), od(), pods(pod(po{Name: "p", NodeSelector: g4dn}))), want: []check{claims(1), firstType("p", "g4dn.8xlarge")}},
		// Karpenter aws/instancetype:351: "should support instance type labels with accelerator"
		{mirrors: []string{"aws/instancetype:351"}, name: "K≠: node selectors on the accelerator labels of inf2.xlarge schedule on it",
			in: input(realCatalog(), od(), pods(pod(po{Name: "p", NodeSelector: inf2}))), want: []check{claims(1), firstType("p", "inf2.xlarge")}},
		// Karpenter aws/instancetype:411: "should not launch AWS Pod ENI on a t3"
		{mirrors: []string{"aws/instancetype:411"}, name: "K: a pod-eni pod on a t3 is unschedulable",
			in:   input(realCatalog(), od(), pods(pod(po{Name: "p", NodeSelector: labels(typeKey, "t3.large"), Limits: res{"vpc.amazonaws.com/pod-eni": "1"}}))),
			want: []check{claims(0), unschedulable("p", "vpc.amazonaws.com/pod-eni")}},
		// Karpenter aws/instancetype:425: "should order the instance types by price and only consider the cheapest ones"
		{mirrors: []string{"aws/instancetype:425"}, name: "K: a NodeClaim lists the 60 cheapest types that fit",
			in: input(realCatalog(), od(), pods(pod(po{Name: "p", CPU: "1"}))), want: []check{claims(1), oracleFirst("p", false), atLeastTypes("p", 60)}},
		// Karpenter aws/instancetype:470: "should order the instance types by price and only consider the spot types that are cheaper than the cheapest on-demand"
		{mirrors: []string{"aws/instancetype:470"}, name: "K: spot offerings dearer than the cheapest on-demand one are left out",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", CPU: "1"}))), want: []check{claims(1), spotBelowOnDemand("p")}},
		// Karpenter aws/instancetype:575: "should de-prioritize metal"
		{mirrors: []string{"aws/instancetype:575"}, name: "K: metal types are not offered for an ordinary pod",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", CPU: "1"}))), want: []check{everyType("p", "not metal", noMetal)}},
		// Karpenter aws/instancetype:594: "should de-prioritize gpu types"
		{mirrors: []string{"aws/instancetype:594"}, name: "K: GPU types are not offered for an ordinary pod",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", CPU: "1"}))), want: []check{everyType("p", "not a GPU type", noGPU)}},
		// Karpenter aws/instancetype:540: "should not remove expensive metal instanceTypeOptions if any of the requirement with minValues is provided"
		{mirrors: []string{"aws/instancetype:540"}, name: "K≠: minValues on capacity type keep metal types out when ordinary types keep them",
			in:   input(realCatalog(), pools(pool("default", 0, st.PoolReqMin(1, ctKey, opIn, spot))), pods(pod(po{Name: "p", CPU: "1"}))),
			want: []check{claims(1), everyType("p", "not metal", noMetal), capacityTypes("p", spot)}},
		// Karpenter aws/instancetype:613: "should launch on metal"
		{mirrors: []string{"aws/instancetype:613"}, name: "K: a pool requiring metal launches metal",
			in: input(realCatalog(), od(req(apis.LabelInstanceSize, opIn, "metal"))), want: nil},
		// Karpenter aws/instancetype:649: "should launch pod in flex instance type"
		{mirrors: []string{"aws/instancetype:649"}, name: "K: a pod selecting flex instances gets them",
			in:   input(realCatalog(), od(), pods(pod(po{Name: "p", NodeSelector: labels(apis.LabelInstanceCapabilityFlex, "true")}))),
			want: []check{everyType("p", "flex", func(it *catalog.InstanceType) bool { return it.Flex })}},
		// Karpenter aws/instancetype:661: "should not launch pod when flex instances are disallowed"
		{mirrors: []string{"aws/instancetype:661"}, name: "K: a pod selecting flex instances a pool disallows is unschedulable",
			in:   input(realCatalog(), od(req(apis.LabelInstanceCapabilityFlex, opNotIn, "true")), pods(pod(po{Name: "p", NodeSelector: labels(apis.LabelInstanceCapabilityFlex, "true")}))),
			want: []check{claims(0), unschedulable("p", apis.LabelInstanceCapabilityFlex)}},
		// Karpenter aws/instancetype:676: "should launch pod in non-flex instances"
		{mirrors: []string{"aws/instancetype:676"}, name: "K: a pod selecting non-flex instances gets them",
			in:   input(realCatalog(), od(), pods(pod(po{Name: "p", NodeSelector: labels(apis.LabelInstanceCapabilityFlex, "false")}))),
			want: []check{everyType("p", "not flex", func(it *catalog.InstanceType) bool { return !it.Flex })}},
		// Karpenter aws/instancetype:759: "should launch instances for nvidia.com/gpu resource requests"
		{mirrors: []string{"aws/instancetype:759"}, name: "K: pods asking 1, 2 and 4 NVIDIA GPUs get types with that many",
			in:   input(realCatalog(), od(), pods(pod(po{Name: "g1", Limits: res{"nvidia.com/gpu": "1"}}), pod(po{Name: "g2", Limits: res{"nvidia.com/gpu": "2"}}), pod(po{Name: "g4", Limits: res{"nvidia.com/gpu": "4"}}))),
			want: []check{allScheduled(), everyType("g4", "4+ GPUs", func(it *catalog.InstanceType) bool { return it.GPU.Count >= 4 && it.GPU.Manufacturer == "nvidia" })}},
		// Karpenter aws/instancetype:823: "should launch instances for aws.amazon.com/neuron resource requests"
		{mirrors: []string{"aws/instancetype:823"}, name: "K: pods asking Neuron devices get Neuron types",
			in:   input(realCatalog(), od(), pods(pod(po{Name: "n2", Limits: res{"aws.amazon.com/neuron": "2"}}), pod(po{Name: "n4", Limits: res{"aws.amazon.com/neuron": "4"}}))),
			want: []check{allScheduled(), everyType("n4", "4+ Neuron devices", func(it *catalog.InstanceType) bool { return it.Accelerator.Count >= 4 })}},
		// Karpenter aws/instancetype:856: "should launch trn1 instances for aws.amazon.com/neuron resource requests"
		{mirrors: []string{"aws/instancetype:856"}, name: "K: a Neuron pod in a trn1.2xlarge pool gets trn1.2xlarge",
			in: input(realCatalog(), od(req(typeKey, opIn, "trn1.2xlarge")), pods(pod(po{Name: "p", Limits: res{"aws.amazon.com/neuron": "1"}}))), want: []check{firstType("p", "trn1.2xlarge")}},
		// Karpenter aws/instancetype:882: "should launch inf2 instances for aws.amazon.com/neuroncore resource requests"
		{mirrors: []string{"aws/instancetype:882"}, name: "K: a NeuronCore pod in an inf2.xlarge pool gets inf2.xlarge",
			in: input(realCatalog(), od(req(typeKey, opIn, "inf2.xlarge")), pods(pod(po{Name: "p", Limits: res{"aws.amazon.com/neuroncore": "2"}}))), want: []check{firstType("p", "inf2.xlarge")}},
		// Karpenter aws/instancetype:909: "should launch instances for vpc.amazonaws.com/efa resource requests"
		{mirrors: []string{"aws/instancetype:909"}, name: "K: an EFA pod gets a type with EFA",
			in: input(realCatalog(), od(), pods(pod(po{Name: "p", Limits: res{"vpc.amazonaws.com/efa": "1"}}))), want: []check{everyType("p", "EFA", func(it *catalog.InstanceType) bool { return it.EFA >= 1 })}},
		// Karpenter aws/instancetype:941: "should launch instances for amd.com/gpu resource requests"
		{mirrors: []string{"aws/instancetype:941"}, name: "K: an AMD GPU pod gets an AMD GPU type",
			in: input(realCatalog(), od(), pods(pod(po{Name: "p", Limits: res{"amd.com/gpu": "1"}}))), want: []check{everyType("p", "AMD GPU", func(it *catalog.InstanceType) bool { return it.GPU.Manufacturer == "amd" })}},
		// Insufficient capacity: offerings EC2 refused recently (Input.Unavailable).
		// Karpenter aws/instancetype:2076: "should launch instances of different type on second reconciliation attempt with Insufficient Capacity Error Cache fallback"
		{mirrors: []string{"aws/instancetype:2076"}, name: "K: an unavailable offering moves the pod to another type",
			in: input(realCatalog(), od(), unavailable(func(it, zone, ct string) bool { return it == "m5.large" && zone == zoneA && ct == onDemand }),
				pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, zoneA, typeKey, "m5.large")}), pod(po{Name: "q", NodeSelector: labels(zoneKey, zoneA), NodeRequirements: nsrs(nsr(familyKey, opIn, "m5"))}))),
			want: []check{unschedulable("p", "NodePool default"), custom(typeIsNot("q", "m5.large"))}},
		// Karpenter aws/instancetype:2109: "should launch instances in a different zone on second reconciliation attempt with Insufficient Capacity Error Cache fallback"
		// Karpenter aws/instancetype:2187: "should launch instances in a different zone on second reconciliation attempt with Insufficient Capacity Error Cache fallback (Habana)"
		{mirrors: []string{"aws/instancetype:2109", "aws/instancetype:2187"}, name: "K: an unavailable offering in a zone moves the pod to another zone",
			in: input(realCatalog(), od(), unavailable(func(it, zone, ct string) bool { return it == "g5.12xlarge" && zone == zoneA }),
				pods(pod(po{Name: "p", NodeSelector: labels(typeKey, "g5.12xlarge"), NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneB))}))),
			want: []check{claimZones("p", zoneB)}},
		// Karpenter aws/instancetype:2136: "should launch smaller instances than optimal if larger instance launch results in Insufficient Capacity Error"
		{mirrors: []string{"aws/instancetype:2136"}, name: "K: a smaller type when the larger one is unavailable",
			in: input(realCatalog(), od(req(typeKey, opIn, "m5.large", "m5.xlarge")), unavailable(func(it, zone, _ string) bool { return it == "m5.xlarge" && zone == zoneA }),
				podList(podsN(2, po{Name: "p", CPU: "1", NodeSelector: labels(zoneKey, zoneA)}))),
			want: []check{allScheduled(), firstType("p-0", "m5.large"), firstType("p-1", "m5.large")}},
		// Karpenter aws/instancetype:2214: "should launch on-demand capacity if flexible to both spot and on-demand, but spot is unavailable"
		{mirrors: []string{"aws/instancetype:2214"}, name: "K: on-demand when spot is unavailable",
			in:   input(realCatalog(), both(req(zoneKey, opIn, zoneA)), unavailable(func(_, _, ct string) bool { return ct == spot }), pods(pod(po{Name: "p"}))),
			want: []check{capacityType("p", onDemand), capacityTypes("p", onDemand)}},
		// Karpenter aws/instancetype:2298: "should not return an offering when marking an offering as unavailable in the Insufficient Capacity Error Cache"
		// Karpenter aws/instancetype:2359: "should not return a capacity type when marking a capacity type as unavailable in the Insufficient Capacity Error Cache"
		// Karpenter aws/instancetype:2390: "should not return a zone when marking a zone as unavailable in the Insufficient Capacity Error Cache"
		{mirrors: []string{"aws/instancetype:2298", "aws/instancetype:2359", "aws/instancetype:2390"}, name: "K: unavailable offerings, capacity types and zones are not offered",
			in:   input(realCatalog(), both(req(typeKey, opIn, "m5.large")), unavailable(func(_, zone, ct string) bool { return zone == zoneA || ct == spot && zone == zoneB }), pods(pod(po{Name: "p"}))),
			want: []check{notInZone("p", zoneA), oracleFirst("p", false)}},
		// Capacity type
		// Karpenter aws/instancetype:2425: "should default to on-demand"
		{mirrors: []string{"aws/instancetype:2425"}, name: "K: a pool without a capacity-type requirement launches on-demand when spot has no price",
			in: input(realCatalog(), pools(pool("default", 0)), spotPricer(nil), pods(pod(po{Name: "p"}))), want: []check{capacityType("p", onDemand)}},
		// Karpenter aws/instancetype:2432: "should launch spot capacity if flexible to both spot and on demand"
		{mirrors: []string{"aws/instancetype:2432"}, name: "K: a pool flexible to spot and on-demand launches spot when cheaper",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p"}))), want: []check{capacityType("p", spot)}},
		// Karpenter aws/instancetype:2441: "should fail to launch capacity when there is no zonal availability for spot"
		{mirrors: []string{"aws/instancetype:2441"}, name: "K: a spot pool with no spot in the pod's zone is unschedulable",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot))), unavailable(func(_, zone, ct string) bool { return ct == spot && zone == zoneA }),
				pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, zoneA)}))),
			want: []check{claims(0), unschedulable("p", "NodePool default")}},
		// Karpenter aws/instancetype:2467: "should succeed to launch spot instance when zonal availability exists"
		{mirrors: []string{"aws/instancetype:2467"}, name: "K: a spot pool launches where spot is available",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot))), unavailable(func(_, zone, ct string) bool { return ct == spot && zone == zoneA }),
				pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, zoneB)}))),
			want: []check{capacityType("p", spot), claimZones("p", zoneB)}},
		// Tenancy
		// Karpenter aws/instancetype:2890: "Should use default tenancy when no requirement is given for tenancy"
		// Karpenter aws/instancetype:2897: "Should use default tenancy if tenancy requirement specifies both default and dedicated tenancies"
		// Karpenter aws/instancetype:2914: "Should launch with default tenancy when required"
		{mirrors: []string{"aws/instancetype:2890", "aws/instancetype:2897", "aws/instancetype:2914"}, name: "K: default tenancy is what every type offers",
			in:   input(realCatalog(), both(req(apis.LabelInstanceTenancy, opIn, "default", "dedicated")), pods(pod(po{Name: "p", NodeSelector: labels(apis.LabelInstanceTenancy, "default")}))),
			want: []check{claims(1), claimLabel("p", apis.LabelInstanceTenancy, "default")}},
	}...)
	// 613 needs a pod.
	for i := range out {
		if out[i].name == "K: a pool requiring metal launches metal" {
			out[i].in.Pods = append(out[i].in.Pods, pod(po{Name: "p", CPU: "1"}))
			out[i].want = []check{everyType("p", "metal", func(it *catalog.InstanceType) bool { return strings.Contains(it.Size, "metal") })}
		}
	}
	return out
}

// spotBelowOnDemand: every spot offering the pod's NodeClaim keeps costs
// less than the cheapest on-demand offering of its types.
func spotBelowOnDemand(pod string) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		odMin := 1e18
		for _, name := range nc.InstanceTypes {
			if it := typeByName(p.in, name); it != nil && it.OnDemandPrice > 0 {
				odMin = min(odMin, it.OnDemandPrice)
			}
		}
		if nc.CapacityType == spot && nc.PricePerHour-nc.CPUSurplusPerHour > odMin {
			t.Errorf("%s: spot at %v above the cheapest on-demand %v", pod, nc.PricePerHour, odMin)
		}
	}
}

// typeIsNot: the pod's NodeClaim does not list the type.
func typeIsNot(pod, name string) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok {
			for _, n := range nc.InstanceTypes {
				if n == name {
					t.Errorf("%s: %s offered though unavailable", pod, name)
				}
			}
		}
	}
}
