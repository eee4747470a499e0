package state_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
)

// realistic is a record as a provision round writes one for pods pods,
// then launched and initialized: sixty instance-type options (the
// solve's default cap) in its claim, requirements and fleet request, three
// zones, the pool's labels and the instance's placement.
func realistic(name string, pods int) *state.NodeClaim {
	var types []string
	for _, fam := range []string{"c5", "c5a", "c6a", "c6i", "c7i", "m5", "m5a", "m6a", "m6i", "m7i", "r5", "r6i"} {
		for _, size := range []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge"} {
			types = append(types, fam+"."+size)
		}
	}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	var podNames []string
	for i := range pods {
		podNames = append(podNames, fmt.Sprintf("team-%02d/web-frontend-7d9f8b6c5-%05d", i%20, i))
	}
	plan := fleet.Plan{
		Token: fleet.LaunchToken("prod-cluster", name, "0123456789abcdef"), NodeClaim: name, NodePool: "default", Count: 1, CapacityType: "spot",
		Templates: []fleet.PlannedTemplate{{Name: "nodewright/prod-cluster/default/0123456789abcdef", ImageID: "ami-0123456789abcdef0", Types: types}},
		Subnets:   []fleet.Subnet{{ID: "subnet-0123456789abcdef0", Zone: zones[0], AvailableIPs: 4000}, {ID: "subnet-0123456789abcdef1", Zone: zones[1], AvailableIPs: 4000}, {ID: "subnet-0123456789abcdef2", Zone: zones[2], AvailableIPs: 4000}},
		Tags: map[string]string{"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "default", "karpenter.sh/nodeclaim": name,
			"eks:eks-cluster-name": "prod-cluster", "kubernetes.io/cluster/prod-cluster": "owned", "nodewright.io/managed-by": "nodewright", "Name": "default/" + name},
		SecurityGroups: []string{"sg-0123456789abcdef0", "sg-0123456789abcdef1"}, Order: types,
	}
	launch, _ := json.Marshal(plan)
	q := resource.MustParse
	at := t0.Add(-time.Hour)
	return &state.NodeClaim{
		Name: name, NodePool: "default", NodeClass: "default", Phase: state.Initialized,
		Claim: scheduling.NodeClaim{
			NodePool: "default", NodeClass: "default", InstanceTypes: types, CapacityType: "spot", CapacityTypes: []string{"spot", "on-demand"}, Zones: zones,
			PricePerHour: 0.1234, NodeCostPerHour: 0.0123, Pods: podNames,
			Requirements: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: types},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones},
				{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot", "on-demand"}},
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: "karpenter.sh/nodepool", Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
			},
			Labels:   map[string]string{"karpenter.sh/nodepool": "default", "team": "web"},
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("7350m"), corev1.ResourceMemory: q("14Gi"), corev1.ResourcePods: q("34")},
		},
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: q("8"), corev1.ResourceMemory: q("16Gi"), corev1.ResourcePods: q("58"), corev1.ResourceEphemeralStorage: q("20Gi")},
		NodePoolHash: "1234567890123456789", NodeClassHash: "9876543210987654321", Reason: "provisioning", Group: name, GroupSize: 1, Launch: launch,
		InstanceID: "i-0123456789abcdef0", InstanceType: "c6a.2xlarge", Zone: "us-east-1b", CapacityType: "spot", ImageID: "ami-0123456789abcdef0",
		SubnetID: "subnet-0123456789abcdef1", SecurityGroups: plan.SecurityGroups, PricePerHour: 0.1187,
		ProviderID: state.ProviderIDFor("us-east-1b", "i-0123456789abcdef0"), NodeName: "ip-10-0-123-45.ec2.internal",
		CreatedAt: at, LaunchedAt: at.Add(2 * time.Second), RegisteredAt: at.Add(40 * time.Second), InitializedAt: at.Add(55 * time.Second),
		PodsHash: "0123456789abcdef", PodsChangedAt: at.Add(3 * time.Minute),
	}
}

// recordSize is the stored size of rec (bytes, as DynamoDB counts them).
func recordSize(t *testing.T, rec *state.NodeClaim) int {
	t.Helper()
	db := statetest.New()
	s, err := state.New(db, "nodewright-state", "prod-cluster", func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, _ := s.Acquire(ctx, state.LeaseProvision, "a", time.Minute)
	v := state.Versions{Pools: map[string]int64{}}
	if err := s.CreateNodeClaims(ctx, l, []*state.NodeClaim{rec}, &v); err != nil {
		t.Fatal(err)
	}
	return statetest.ItemSize(db.Item("prod-cluster", state.Key(state.PrefixNodeClaim, rec.Name)))
}

// What a read of the records costs, in strongly consistent read units
// (4 KB each) computed from the items' sizes as DynamoDB bills them: a
// cold read grows with the records; a warm read grows with the changes
// since the previous read and not at all with the records. The figures
// are logged for the benchmarks page (go test -run TestReadUnits -v).
func TestReadUnitsGrowWithChangesNotRecords(t *testing.T) {
	for _, pods := range []int{30, 110, 737} {
		t.Logf("record of a %d-pod node: %d bytes", pods, recordSize(t, realistic("default-abcde", pods)))
	}
	ctx := context.Background()
	warm := map[int][]int64{} // changes -> units at each size
	for _, n := range []int{100, 1000, 5000} {
		db := statetest.New()
		wclk, rclk := &clock{t: t0}, &clock{t: t0}
		writer, reader := newStoreOn(t, db, wclk), newStoreOn(t, db, rclk)
		l, err := writer.Acquire(ctx, state.LeaseProvision, "w", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		recs := make([]*state.NodeClaim, n)
		for i := range recs {
			recs[i] = realistic(fmt.Sprintf("default-%05d", i), 30)
		}
		v := state.Versions{Pools: map[string]int64{}}
		if err := writer.CreateNodeClaims(ctx, l, recs, &v); err != nil {
			t.Fatal(err)
		}
		read := func() int64 {
			t.Helper()
			before := db.Units().Read
			got, err := reader.NodeClaims(ctx)
			if err != nil || len(got) != n {
				t.Fatalf("%d records read, %v; want %d", len(got), err, n)
			}
			return db.Units().Read - before
		}
		// The cold read comes past the overlap after the records' creation,
		// as the warm reads come after their changes.
		wclk.Add(2 * time.Minute)
		rclk.Add(2 * time.Minute)
		cold := read()
		line := fmt.Sprintf("%5d records: cold %5d units", n, cold)
		for _, changes := range []int{0, 10, 100} {
			// Past the overlap, so that the previous round's changes are
			// not read again.
			wclk.Add(2 * time.Minute)
			rclk.Add(2 * time.Minute)
			for i := range changes {
				rec := recs[(i*37)%n]
				rec.PodsHash = fmt.Sprintf("%016x", changes+i)
				if err := writer.PutNodeClaim(ctx, rec); err != nil {
					t.Fatal(err)
				}
			}
			u := read()
			warm[changes] = append(warm[changes], u)
			line += fmt.Sprintf(", warm with %3d changes %4d units", changes, u)
		}
		t.Log(line)
		if n >= 1000 && cold < int64(n)/2 {
			t.Errorf("a cold read of %d records cost %d units: the meter does not count the records", n, cold)
		}
	}
	for changes, us := range warm {
		for _, u := range us[1:] {
			if u != us[0] {
				t.Errorf("a warm read with %d changes cost %v units at 100, 1,000 and 5,000 records: it grows with the records", changes, us)
			}
		}
		// A record of 7 KB is two units; the change items, a unit per 4 KB.
		if us[0] > int64(2*changes)+1+int64(changes)/10 {
			t.Errorf("a warm read with %d changes cost %d units, more than two a change and its change item", changes, us[0])
		}
	}
}

// What a record's life costs in write units (a unit per KB, twice that in
// a transaction), with the change log, against the same writes without
// it: the record's writes were single puts and deletes, now each is a
// transaction with a change item of a unit.
func TestLifecycleWriteUnits(t *testing.T) {
	db := statetest.New()
	clk := &clock{t: t0}
	s := newStoreOn(t, db, clk)
	ctx := context.Background()
	l, err := s.Acquire(ctx, state.LeaseProvision, "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rec := realistic("default-abcde", 30)
	rec.Phase = state.Launching
	step := func(what string, tx bool, fn func() error) (now, before int64) {
		t.Helper()
		u := db.Units().Write
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		now = db.Units().Write - u
		// The change item is under a KB: two units in a transaction.
		before = now - 2
		if !tx {
			before /= 2
		}
		t.Logf("%-12s %3d units (without the change log %3d)", what, now, before)
		return now, before
	}
	var total, old int64
	add := func(a, b int64) { total, old = total+a, old+b }
	add(step("create", true, func() error {
		v := state.Versions{Pools: map[string]int64{}}
		return s.CreateNodeClaims(ctx, l, []*state.NodeClaim{rec}, &v)
	}))
	for _, ph := range []state.Phase{state.Launched, state.Registered, state.Initialized} {
		add(step(string(ph), false, func() error { rec.Phase = ph; return s.PutNodeClaim(ctx, rec) }))
	}
	add(step("disrupting", true, func() error {
		return s.StartAction(ctx, &state.Action{ID: "a1", Kind: state.KindConsolidation}, []*state.NodeClaim{rec})
	}))
	add(step("terminating", false, func() error { rec.Phase = state.Terminating; return s.PutNodeClaim(ctx, rec) }))
	add(step("delete", false, func() error { return s.DeleteNodeClaim(ctx, rec) }))
	t.Logf("a record's life: %d write units (without the change log %d)", total, old)
	if total <= old || total > 3*old {
		t.Errorf("a record's life costs %d write units with the change log, %d without: want more, at most three times", total, old)
	}
}
