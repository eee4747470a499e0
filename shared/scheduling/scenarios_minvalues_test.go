package scheduling_test

import (
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

const genKey = apis.LabelInstanceGeneration

// sized is a synthetic type with a name, vCPUs, generation and on-demand price.
func sized(name string, vcpu, generation int, price float64) *catalog.InstanceType {
	return st.Type(st.TypeOptions{Name: name, VCPU: vcpu, Generation: generation, Price: price})
}

// oneAndFour is Karpenter's pair for minValues cases: instance-type-1 holds
// one 900m pod, instance-type-2 (dearer) holds two.
func oneAndFour() opt {
	return types(sized("instance-type-1", 1, 2, 0.52), sized("instance-type-2", 4, 3, 1.0))
}

// twoPods are two 900m pods that fit together only on the larger type.
func twoPods(o po) opt {
	return podList(podsN(2, func() po { o.Name, o.CPU, o.Memory = "web", "900m", "900Mi"; return o }()))
}

func minPool(name string, weight int32, rs ...apis.NodeSelectorRequirementWithMinValues) *apis.NodePool {
	return pool(name, weight, append(rs, req(ctKey, opIn, onDemand))...)
}

func policy(p scheduling.MinValuesPolicy) opt {
	return func(in *scheduling.Input) { in.MinValuesPolicy = p }
}

// relaxed: the pod's NodeClaim keeps these minValues, lowered from the
// pool's (BestEffort).
func relaxed(pod string, want map[string]int) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		if !nc.MinValuesRelaxed {
			t.Errorf("%s: NodeClaim's minValues not marked relaxed (%v)", pod, nc.MinValues)
		}
		for k, v := range want {
			if nc.MinValues[k] != v {
				t.Errorf("%s: minValues %v, want %s: %d", pod, nc.MinValues, k, v)
			}
		}
	}
}

// atLeastTypes: the pod's NodeClaim lists at least n instance types.
func atLeastTypes(pod string, n int) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok && len(nc.InstanceTypes) < n {
			t.Errorf("%s: %d instance types %v, want at least %d", pod, len(nc.InstanceTypes), nc.InstanceTypes, n)
		}
	}
}

// minValuesScenarios: minValues are kept by every NodeClaim, also when its
// types are cut to the cap; Strict fails the pods that cannot have them,
// BestEffort relaxes them and says so.
func minValuesScenarios() []scenario {
	typeIn := func(min int, values ...string) apis.NodeSelectorRequirementWithMinValues {
		return st.PoolReqMin(min, typeKey, opIn, values...)
	}
	its := []string{"instance-type-1", "instance-type-2", "instance-type-3"}
	return []scenario{
		{
			// Karpenter instance_selection:621: "should schedule respecting the minValues from instance-type requirements"
			mirrors: []string{"instance_selection:621"},
			name:    "minValues 2 on instance types puts pods that fit only the larger type on separate claims",
			in:      input(oneAndFour(), pools(minPool("default", 0, typeIn(2, its[:2]...))), twoPods(po{})),
			want:    []check{claims(2), separate("web-0", "web-1"), atLeastTypes("web-0", 2), atLeastTypes("web-1", 2)},
		},
		{
			// Karpenter instance_selection:1261: "schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the requirement after truncation"
			mirrors: []string{"instance_selection:1261"},
			name:    "minValues that the cap on a claim's types would break leave the pods unschedulable",
			in:      input(oneAndFour(), maxTypes(1), pools(minPool("default", 0, typeIn(2, its[:2]...))), twoPods(po{})),
			want: []check{claims(0), unschedulable("web-0", "NodePool default", "minValues", typeKey),
				unschedulable("web-1", "NodePool default", "minValues", typeKey)},
		},
		{
			// Karpenter instance_selection:1234: "schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the requirement"
			mirrors: []string{"instance_selection:1234"},
			name:    "minValues above the types there are leave the pod unschedulable",
			in: input(types(st.SyntheticTypes(10)...), pools(minPool("default", 0, st.PoolReqMin(11, typeKey, opExists))),
				pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(0), unschedulable("web", "NodePool default", "minValues", typeKey, "11", "10")},
		},
		{
			name: "two minValues keys are kept together within the cap",
			in: input(types(
				st.Type(st.TypeOptions{Name: "t1", Family: "f1", Category: "x", Price: 0.01}),
				st.Type(st.TypeOptions{Name: "t2", Family: "f1", Category: "y", Price: 0.02}),
				st.Type(st.TypeOptions{Name: "t3", Family: "f2", Category: "x", Price: 0.03}),
				st.Type(st.TypeOptions{Name: "t4", Family: "f3", Category: "x", Price: 0.04}),
				st.Type(st.TypeOptions{Name: "t5", Family: "f4", Category: "y", Price: 0.05})),
				maxTypes(3),
				pools(minPool("default", 0, st.PoolReqMin(2, categoryKey, opExists), st.PoolReqMin(3, familyKey, opExists))),
				pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(1), allScheduled(), firstType("web", "t1")},
		},
		{
			name: "types minValues needs stay on the claim even when their spot offerings cost more than on-demand",
			in: input(types(sized("t1", 1, 1, 0.02), sized("t2", 1, 1, 0.03), sized("t3", 1, 1, 0.04)),
				unavailable(func(it, _, ct string) bool { return it == "t3" && ct == onDemand }),
				func(in *scheduling.Input) { in.Spot = st.SyntheticSpot(in.InstanceTypes).WithFactor("t3", 2) },
				pools(pool("default", 0, st.PoolReqMin(3, typeKey, opExists))),
				pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(1), atLeastTypes("web", 3)},
		},
		{
			// Karpenter instance_selection:693: "should schedule respecting the minValues in Gt operator"
			mirrors: []string{"instance_selection:693"},
			name:    "minValues on a Gt requirement counts the values above the bound",
			in: input(types(sized("instance-type-1", 1, 2, 0.52), sized("instance-type-2", 1, 3, 1.0), sized("instance-type-3", 4, 4, 1.2)),
				pools(minPool("default", 0, st.PoolReqMin(2, genKey, opGt, "2"))), twoPods(po{})),
			want: []check{claims(2), separate("web-0", "web-1"), atLeastTypes("web-0", 2)},
		},
		{
			// Karpenter instance_selection:784: "scheduler should fail if the minValues in Gt operator is not satisfied"
			mirrors: []string{"instance_selection:784"},
			name:    "minValues the pods' own Gt requirement leaves unmet make them unschedulable",
			in: input(types(sized("instance-type-1", 1, 2, 0.52), sized("instance-type-2", 4, 3, 1.0)),
				pools(minPool("default", 0, st.PoolReqMin(2, genKey, opExists))),
				twoPods(po{NodeRequirements: nsrs(nsr(genKey, opGt, "2"))})),
			want: []check{claims(0), unschedulable("web-0", "minValues", genKey), unschedulable("web-1", "minValues", genKey)},
		},
		{
			// Karpenter instance_selection:870: "should schedule respecting the minValues in Lt operator"
			mirrors: []string{"instance_selection:870"},
			name:    "minValues on an Lt requirement counts the values below the bound",
			in: input(types(sized("instance-type-1", 1, 2, 0.52), sized("instance-type-2", 4, 3, 1.0), sized("instance-type-3", 4, 4, 1.2)),
				pools(minPool("default", 0, st.PoolReqMin(2, genKey, opLt, "4"))), twoPods(po{})),
			want: []check{claims(2), separate("web-0", "web-1"), atLeastTypes("web-0", 2)},
		},
		{
			// Karpenter instance_selection:961: "scheduler should fail if the minValues in Lt operator is not satisfied"
			mirrors: []string{"instance_selection:961"},
			name:    "minValues the pods' own Lt requirement leaves unmet make them unschedulable",
			in: input(types(sized("instance-type-1", 1, 2, 0.52), sized("instance-type-2", 4, 4, 1.0)),
				pools(minPool("default", 0, st.PoolReqMin(2, genKey, opLt, "4"))), twoPods(po{})),
			want: []check{claims(0), unschedulable("web-0", "minValues", genKey)},
		},
		{
			// Karpenter instance_selection:1029: "should schedule considering the max of the minValues of In and NotIn operators in the instance-type requirements"
			// Karpenter instance_selection:1331: "should schedule and pick the max of minValues of InstanceTypes if multiple operators are used for the same requirement."
			mirrors: []string{"instance_selection:1029", "instance_selection:1331"},
			name:    "requirements on one key keep the largest of their minValues",
			in: input(types(sized("instance-type-1", 1, 2, 0.52), sized("instance-type-2", 4, 3, 1.0), sized("instance-type-3", 4, 4, 1.2)),
				pools(minPool("default", 0, typeIn(1, its...), st.PoolReqMin(2, typeKey, opNotIn, "instance-type-3"))), twoPods(po{})),
			want: []check{claims(2), separate("web-0", "web-1"), atLeastTypes("web-0", 2), custom(func(t *testing.T, p *plan) {
				if nc, ok := p.claim(t, "web-0"); ok && nc.MinValues[typeKey] != 2 {
					t.Errorf("minValues %v, want %s: 2", nc.MinValues, typeKey)
				}
			})},
		},
		{
			// Karpenter instance_selection:1121: "should schedule considering the max of the minValues of Gt and Lt operators."
			mirrors: []string{"instance_selection:1121"},
			name:    "Gt and Lt on one key keep the larger minValues",
			in: input(types(sized("instance-type-1", 1, 3, 0.52), sized("instance-type-2", 4, 4, 1.0), sized("instance-type-3", 4, 5, 1.2), sized("instance-type-4", 4, 2, 0.4)),
				pools(minPool("default", 0, st.PoolReqMin(1, genKey, opGt, "2"), st.PoolReqMin(2, genKey, opLt, "5"))), twoPods(po{})),
			want: []check{claims(2), separate("web-0", "web-1"), atLeastTypes("web-0", 2)},
		},
		{
			// Karpenter instance_selection:1410: "should schedule and respect multiple requirement keys with minValues"
			mirrors: []string{"instance_selection:1410"},
			name:    "minValues on two keys are both kept",
			in: input(types(st.Type(st.TypeOptions{Name: "instance-type-1", VCPU: 1, Arch: "arm64", Price: 0.52}), sized("instance-type-2", 4, 1, 1.0)),
				pools(minPool("default", 0, st.PoolReqMin(2, archKey, opExists), typeIn(1, its[:2]...))), twoPods(po{})),
			want: []check{claims(2), separate("web-0", "web-1"), atLeastTypes("web-0", 2)},
		},
		{
			// Karpenter provisioning:2911: "should not schedule when minValues requirement is not met"
			mirrors: []string{"provisioning:2911"},
			name:    "Strict: minValues the types cannot meet leave the pod unschedulable",
			in:      input(oneAndFour(), policy(scheduling.MinValuesStrict), pools(minPool("default", 100, typeIn(3, its...))), pods(pod(po{Name: "web", CPU: "900m"}))),
			want:    []check{claims(0), unschedulable("web", "NodePool default", "minValues", typeKey, "3", "2")},
		},
		{
			// Karpenter provisioning:2962: "should schedule even when minValues requirement is not met"
			mirrors: []string{"provisioning:2962"},
			name:    "BestEffort: minValues the types cannot meet are lowered and the plan says so",
			in:      input(oneAndFour(), policy(scheduling.MinValuesBestEffort), pools(minPool("default", 100, typeIn(3, its...))), pods(pod(po{Name: "web", CPU: "900m"}))),
			want:    []check{claims(1), firstType("web", "instance-type-1"), relaxed("web", map[string]int{typeKey: 2})},
		},
		{
			// Karpenter provisioning:3024: "should relax minValues before falling back to other nodepools"
			mirrors: []string{"provisioning:3024"},
			name:    "BestEffort relaxes minValues in the heavier pool before falling back to a lighter one",
			in: input(oneAndFour(), policy(scheduling.MinValuesBestEffort),
				pools(minPool("default", 100, typeIn(3, its...)), minPool("fallback", 10, req(typeKey, opIn, its...))), pods(pod(po{Name: "web", CPU: "900m"}))),
			want: []check{claims(1), fromPool("web", "default"), relaxed("web", map[string]int{typeKey: 2})},
		},
		{
			// Karpenter provisioning:3100: "should choose nodepool with higher weight when relaxing minValues"
			mirrors: []string{"provisioning:3100"},
			name:    "BestEffort relaxes minValues in the heavier of two pools that both ask too much",
			in: input(oneAndFour(), policy(scheduling.MinValuesBestEffort),
				pools(minPool("default", 100, typeIn(3, its...)), minPool("light", 10, typeIn(3, its...))), pods(pod(po{Name: "web", CPU: "900m"}))),
			want: []check{claims(1), fromPool("web", "default"), relaxed("web", map[string]int{typeKey: 2})},
		},
		{
			// Karpenter provisioning:3216: "should not schedule when zone minValues requirement is not met"
			mirrors: []string{"provisioning:3216"},
			name:    "Strict: zone minValues the offerings cannot meet leave the pod unschedulable",
			in: input(types(sized("instance-type-1", 4, 1, 0.52)), unavailable(func(_, zone, _ string) bool { return zone == zoneC }),
				pools(pool("default", 0, st.PoolReqMin(3, zoneKey, opIn, zoneA, zoneB, zoneC))), pods(pod(po{Name: "web", CPU: "900m"}))),
			want: []check{claims(0), unschedulable("web", "NodePool default", "minValues", zoneKey)},
		},
		{
			// Karpenter provisioning:3259: "should schedule even when zone minValues requirement is not met"
			mirrors: []string{"provisioning:3259"},
			name:    "BestEffort: zone minValues the offerings cannot meet are lowered",
			in: input(types(sized("instance-type-1", 4, 1, 0.52)), unavailable(func(_, zone, _ string) bool { return zone == zoneC }), policy(scheduling.MinValuesBestEffort),
				pools(pool("default", 0, st.PoolReqMin(3, zoneKey, opIn, zoneA, zoneB, zoneC))), pods(pod(po{Name: "web", CPU: "900m"}))),
			want: []check{claims(1), firstType("web", "instance-type-1"), relaxed("web", map[string]int{zoneKey: 2}), claimZones("web", zoneA, zoneB)},
		},
		{
			// Karpenter provisioning:3353: "should schedule when minValues requirement is not met"
			mirrors: []string{"provisioning:3353"},
			name:    "BestEffort lowers instance type and zone minValues together",
			in: input(types(sized("instance-type-1", 4, 1, 0.52)), unavailable(func(_, zone, _ string) bool { return zone == zoneC }), policy(scheduling.MinValuesBestEffort),
				pools(pool("default", 100, typeIn(3, its...), st.PoolReqMin(3, zoneKey, opIn, zoneA, zoneB, zoneC))), pods(pod(po{Name: "web", CPU: "900m"}))),
			want: []check{claims(1), relaxed("web", map[string]int{typeKey: 1, zoneKey: 2})},
		},
		{
			name: "an unknown minValuesPolicy is an error",
			in:   input(policy("Sometimes"), pods(pod(po{Name: "web", CPU: "100m"}))),
			err:  `minValuesPolicy "Sometimes" is not one of Strict, BestEffort`,
		},
	}
}
