package scheduling_test

// Scenarios mirroring Karpenter's provisioning/scheduling
// instance_selection_test.go (v1.14.1), "instance_selection:<line>", on the
// real catalog (Karpenter's assorted fake types) with the spot price model:
// the NodeClaim's first type must be the oracle's cheapest offering for the
// pod and every type it lists must satisfy the constraints.

import (
	"fmt"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

func selectionParity() []scenario {
	both := func(extra ...apis.NodeSelectorRequirementWithMinValues) opt {
		return pools(pool("default", 0, append([]apis.NodeSelectorRequirementWithMinValues{req(ctKey, opIn, spot, onDemand), req(archKey, opIn, arm64, amd64)}, extra...)...))
	}
	cheap := func(name string, _ po, extra ...check) []check {
		return append([]check{claims(1), oracleFirst(name, false)}, extra...)
	}
	amdOnly := func() opt {
		return func(in *scheduling.Input) {
			in.InstanceTypes = catalog.Default().Filter(func(it *catalog.InstanceType) bool { return it.Arch == amd64 })
		}
	}
	var grid []scenario
	for _, cpu := range []string{"100m", "1", "2500m", "8"} {
		for _, mem := range []string{"100Mi", "2Gi", "8Gi", "32Gi"} {
			want := []check{claims(1), allScheduled(), sameNode("p-0", "p-1", "p-2")}
			if mem == "32Gi" {
				// Memory-bound pods on a catalog priced by vCPU: three nodes cost what one does.
				want = []check{allScheduled()}
			}
			// Karpenter instance_selection:509: "should schedule on an instance with enough resources"
			grid = append(grid, scenario{mirrors: []string{"instance_selection:509"}, name: fmt.Sprintf("K: three pods of %s cpu and %s get types that all hold them", cpu, mem),
				in: input(podList(podsN(3, po{Name: "p", CPU: cpu, Memory: mem}))), want: want})
		}
	}
	out := []scenario{
		// Karpenter instance_selection:82: "should schedule on one of the cheapest instances"
		{mirrors: []string{"instance_selection:82"}, name: "K: the cheapest offering for an unconstrained pod",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p"}))), want: cheap("p", po{})},
		// Karpenter instance_selection:89: "should schedule on one of the cheapest instances (pod arch = amd64)"
		{mirrors: []string{"instance_selection:89"}, name: "K: the cheapest offering for a pod requiring amd64, every type amd64",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(archKey, opIn, amd64))}))), want: cheap("p", po{}, everyType("p", "amd64", archIs(amd64)))},
		// Karpenter instance_selection:103: "should schedule on one of the cheapest instances (pod arch = arm64)"
		{mirrors: []string{"instance_selection:103"}, name: "K: the cheapest offering for a pod requiring arm64, every type arm64",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(archKey, opIn, arm64))}))), want: cheap("p", po{}, everyType("p", isArm, archIs(arm64)))},
		// Karpenter instance_selection:116: "should schedule on one of the cheapest instances (prov arch = amd64)"
		{mirrors: []string{"instance_selection:116"}, name: "K: the cheapest offering of an amd64 pool",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot, onDemand), req(archKey, opIn, amd64))), pods(pod(po{Name: "p"}))), want: cheap("p", po{}, everyType("p", "amd64", archIs(amd64)))},
		// Karpenter instance_selection:131: "should schedule on one of the cheapest instances (prov arch = arm64)"
		{mirrors: []string{"instance_selection:131"}, name: "K: the cheapest offering of an arm64 pool",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot, onDemand), req(archKey, opIn, arm64))), pods(pod(po{Name: "p"}))), want: cheap("p", po{}, everyType("p", isArm, archIs(arm64)))},
		// Karpenter instance_selection:189: "should schedule on one of the cheapest instances (pod os = linux)"
		{mirrors: []string{"instance_selection:189", "instance_selection:202"}, name: "K: the cheapest offering for a pod requiring linux",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(osKey, opIn, "linux"))}))), want: cheap("p", po{})},
		// Karpenter instance_selection:215: "should schedule on one of the cheapest instances (prov zone = test-zone-2)"
		{mirrors: []string{"instance_selection:215"}, name: "K: the cheapest offering of a pool in one zone",
			in: input(realCatalog(), both(req(zoneKey, opIn, zoneB)), pods(pod(po{Name: "p"}))), want: cheap("p", po{}, claimZones("p", zoneB))},
		// Karpenter instance_selection:230: "should schedule on one of the cheapest instances (pod zone = test-zone-2)"
		{mirrors: []string{"instance_selection:230"}, name: "K: the cheapest offering for a pod requiring one zone",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneB))}))), want: cheap("p", po{}, claimZones("p", zoneB))},
		// Karpenter instance_selection:243: "should schedule on one of the cheapest instances (prov ct = spot)"
		{mirrors: []string{"instance_selection:243"}, name: "K: the cheapest offering of a spot pool",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot))), pods(pod(po{Name: "p"}))), want: cheap("p", po{}, capacityTypes("p", spot))},
		// Karpenter instance_selection:258: "should schedule on one of the cheapest instances (pod ct = spot)"
		{mirrors: []string{"instance_selection:258"}, name: "K: the cheapest offering for a pod requiring spot",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(ctKey, opIn, spot))}))), want: cheap("p", po{}, capacityTypes("p", spot))},
		// Karpenter instance_selection:271: "should schedule on one of the cheapest instances (prov ct = ondemand, prov zone = test-zone-1)"
		{mirrors: []string{"instance_selection:271"}, name: "K: the cheapest offering of an on-demand pool in one zone",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA))), pods(pod(po{Name: "p"}))), want: cheap("p", po{}, capacityTypes("p", onDemand), claimZones("p", zoneA))},
		// Karpenter instance_selection:291: "should schedule on one of the cheapest instances (pod ct = spot, pod zone = test-zone-1)"
		{mirrors: []string{"instance_selection:291"}, name: "K: the cheapest offering for a pod requiring spot in one zone",
			in: input(realCatalog(), both(), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(ctKey, opIn, spot), nsr(zoneKey, opIn, zoneA))}))), want: cheap("p", po{}, capacityTypes("p", spot), claimZones("p", zoneA))},
		// Karpenter instance_selection:310: "should schedule on one of the cheapest instances (prov ct = spot, pod zone = test-zone-2)"
		{mirrors: []string{"instance_selection:310"}, name: "K: the cheapest offering of a spot pool for a pod requiring one zone",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot))), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneB))}))), want: cheap("p", po{}, capacityTypes("p", spot), claimZones("p", zoneB))},
		// Karpenter instance_selection:362: "should schedule on one of the cheapest instances (prov = spot/test-zone-2, pod = amd64/linux)"
		{mirrors: []string{"instance_selection:362"}, name: "K: the cheapest offering of a spot pool in one zone for an amd64 linux pod",
			in:   input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot), req(zoneKey, opIn, zoneB))), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(archKey, opIn, amd64), nsr(osKey, opIn, "linux"))}))),
			want: cheap("p", po{}, capacityTypes("p", spot), claimZones("p", zoneB), everyType("p", "amd64", archIs(amd64)))},
		// Karpenter instance_selection:396: "should schedule on one of the cheapest instances (pod ct = spot/test-zone-2/amd64/linux)"
		{mirrors: []string{"instance_selection:396"}, name: "K: the cheapest offering for a spot, one-zone, amd64 linux pod",
			in:   input(realCatalog(), both(), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(ctKey, opIn, spot), nsr(zoneKey, opIn, zoneB), nsr(archKey, opIn, amd64), nsr(osKey, opIn, "linux"))}))),
			want: cheap("p", po{}, capacityTypes("p", spot), claimZones("p", zoneB), everyType("p", "amd64", archIs(amd64)))},
		// Karpenter instance_selection:428: "should not schedule if no instance type matches selector (pod arch = arm)"
		{mirrors: []string{"instance_selection:428"}, name: "K: an arm64 pod with only amd64 types is unschedulable, nothing launched",
			in: input(realCatalog(), amdOnly(), both(), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(archKey, opIn, arm64))}))), want: []check{claims(0), unschedulable("p", archKey)}},
		// Karpenter instance_selection:448: "should not schedule if no instance type matches selector (pod arch = arm zone=test-zone-2)"
		{mirrors: []string{"instance_selection:448"}, name: "K: an arm64 pod in a zone with only amd64 types is unschedulable",
			in: input(realCatalog(), both(), unavailable(func(it, zone, _ string) bool { return zone == zoneB && typeArch(it) == arm64 }),
				pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(archKey, opIn, arm64), nsr(zoneKey, opIn, zoneB))}))),
			want: []check{claims(0), unschedulable("p", "NodePool default")}},
		// Karpenter instance_selection:477: "should not schedule if no instance type matches selector (prov arch = arm / pod zone=test-zone-2)"
		{mirrors: []string{"instance_selection:477"}, name: "K: an arm64 pool and a pod in a zone with only amd64 types is unschedulable",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot, onDemand), req(archKey, opIn, arm64))), unavailable(func(it, zone, _ string) bool { return zone == zoneB && typeArch(it) == arm64 }),
				pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneB))}))),
			want: []check{claims(0), unschedulable("p", "NodePool default")}},
		// Karpenter instance_selection:563: "should schedule on cheaper on-demand instance even when spot price ordering would place other instance types first"
		{mirrors: []string{"instance_selection:563"}, name: "K: an on-demand pool picks the cheapest on-demand type whatever spot costs",
			in: input(types(st.Type(st.TypeOptions{Name: "test-instance1", VCPU: 1, MemoryMiB: 1024, Price: 1.0}), st.Type(st.TypeOptions{Name: "test-instance2", VCPU: 1, MemoryMiB: 1024, Price: 1.3})),
				func(in *scheduling.Input) {
					in.Spot = st.SyntheticSpot(in.InstanceTypes).WithFactor("test-instance1", 0.2).WithFactor("test-instance2", 0.077)
				}, pools(pool("default", 0, req(ctKey, opIn, onDemand))), pods(pod(po{Name: "p"}))),
			want: []check{firstType("p", "test-instance1"), capacityType("p", onDemand)}},
	}
	return append(out, grid...)
}

// typeArch is the architecture of a catalog type by name.
func typeArch(name string) string {
	if it, ok := catalog.Default().Get(name); ok {
		return it.Arch
	}
	return ""
}
