package nodeclaim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func record(phase state.Phase) *state.NodeClaim {
	rec := &state.NodeClaim{
		Name: "default-abcde", NodePool: "default", NodeClass: "default", Phase: phase, CreatedAt: t0,
		Claim: scheduling.NodeClaim{
			NodePool: "default", Labels: map[string]string{"team": "a"},
			Requirements: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge"}},
			},
			MinValues:     map[string]int{corev1.LabelInstanceTypeStable: 2},
			Taints:        []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoExecute}},
			Requests:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
		},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}
	if phase != state.Launching {
		rec.InstanceID, rec.InstanceType, rec.Zone, rec.CapacityType = "i-0abc", "m5.large", "us-east-1a", "spot"
		rec.ImageID, rec.ProviderID, rec.LaunchedAt = "ami-1", "aws:///us-east-1a/i-0abc", t0.Add(time.Second)
	}
	if phase == state.Registered || phase == state.Initialized {
		rec.RegisteredAt, rec.NodeName = t0.Add(time.Minute), "ip-10-0-0-1"
	}
	if phase == state.Initialized {
		rec.InitializedAt = t0.Add(2 * time.Minute)
	}
	return rec
}

func pool() *apis.NodePool {
	p := &apis.NodePool{}
	p.Name, p.UID = "default", "pool-uid"
	d := 5 * time.Minute
	p.Spec.Disruption.ConsolidateAfter = apis.NillableDuration{Duration: &d}
	p.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	return p
}

func statusOf(nc *NodeClaim, t string) string {
	if c := nc.Condition(t); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

// Karpenter's conditions follow the record through its life, and the root
// Ready that `kubectl get nodeclaims` shows is True only once the node is
// launched, registered and initialized.
func TestDesiredConditions(t *testing.T) {
	for _, c := range []struct {
		phase                                         state.Phase
		launched, registered, initialized, ready, con string
		now                                           time.Time
	}{
		{state.Launching, "Unknown/AwaitingReconciliation", "Unknown/NodeNotFound", "Unknown/NodeNotReady", "Unknown/ReconcilingDependents", "", t0},
		{state.Launched, "True/Launched", "Unknown/NodeNotFound", "Unknown/NodeNotReady", "Unknown/ReconcilingDependents", "", t0},
		{state.Registered, "True/Launched", "True/Registered", "Unknown/NodeNotReady", "Unknown/ReconcilingDependents", "", t0},
		{state.Initialized, "True/Launched", "True/Registered", "True/Initialized", "True/Ready", "", t0.Add(3 * time.Minute)},
		{state.Initialized, "True/Launched", "True/Registered", "True/Initialized", "True/Ready", "True/Consolidatable", t0.Add(7 * time.Minute)},
	} {
		nc := Desired(Input{Record: record(c.phase), Pool: pool(), Now: c.now})
		got := []string{statusOf(nc, ConditionLaunched), statusOf(nc, ConditionRegistered), statusOf(nc, ConditionInitialized), statusOf(nc, ConditionReady), statusOf(nc, ConditionConsolidatable)}
		want := []string{c.launched, c.registered, c.initialized, c.ready, c.con}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s at %s: conditions %v, want %v", c.phase, c.now.Sub(t0), got, want)
				break
			}
		}
	}
}

// Labels, finalizer, owner reference and spec are those Karpenter sets.
func TestDesiredObject(t *testing.T) {
	rec := record(state.Initialized)
	rec.Disruption = &state.Disruption{Action: "consolidation-x", Reason: "Empty", Cause: state.CauseConsolidation}
	nc := Desired(Input{Record: rec, Pool: pool(), Now: t0.Add(3 * time.Minute)})
	for k, v := range map[string]string{
		apis.LabelNodePool: "default", corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-east-1a",
		apis.LabelCapacityType: "spot", "team": "a", LabelManagedBy: "nodewright",
	} {
		if nc.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, nc.Labels[k], v)
		}
	}
	if !nc.HasFinalizer() || len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].UID != "pool-uid" || nc.OwnerReferences[0].Kind != "NodePool" {
		t.Errorf("finalizers %v owners %+v", nc.Finalizers, nc.OwnerReferences)
	}
	if got := statusOf(nc, ConditionDisruptionReason); got != "True/Empty" {
		t.Errorf("DisruptionReason %s", got)
	}
	if nc.Spec.NodeClassRef.Name != "default" || nc.Spec.NodeClassRef.Kind != "EC2NodeClass" || nc.Spec.ExpireAfter != "720h" ||
		nc.Spec.TerminationGracePeriod.Duration != time.Hour || *nc.Spec.Requirements[0].MinValues != 2 || len(nc.Spec.StartupTaints) != 1 {
		t.Errorf("spec %+v", nc.Spec)
	}
	if nc.Status.ProviderID != "aws:///us-east-1a/i-0abc" || nc.Status.ImageID != "ami-1" {
		t.Errorf("status %+v", nc.Status)
	}
	// expireAfter as the NodePool says it (Karpenter's pattern takes both
	// forms; "Never" stays "Never").
	for raw, want := range map[string]string{"24h": "24h", apis.Never: apis.Never} {
		p := pool()
		p.Spec.Template.Spec.ExpireAfter = apis.NillableDuration{Raw: raw}
		if raw != apis.Never {
			d := 24 * time.Hour
			p.Spec.Template.Spec.ExpireAfter.Duration = &d
		}
		if got := Desired(Input{Record: rec, Pool: p, Now: t0}).Spec.ExpireAfter; got != want {
			t.Errorf("expireAfter %q: %q, want %q", raw, got, want)
		}
	}
	// A NodePool from the deployed configuration has no UID: no owner.
	p := pool()
	p.UID = ""
	if nc := Desired(Input{Record: rec, Pool: p, Now: t0}); len(nc.OwnerReferences) != 0 {
		t.Errorf("owner reference to a NodePool with no UID: %+v", nc.OwnerReferences)
	}
	// An action's free-text reason never reaches the condition's reason
	// (the CRD's pattern would refuse it).
	rec.Disruption = &state.Disruption{Action: "consolidation-x", Reason: "partial replacement taken back", Cause: state.CauseConsolidation}
	if got := statusOf(Desired(Input{Record: rec, Pool: pool(), Now: t0}), ConditionDisruptionReason); got != "True/Underutilized" {
		t.Errorf("DisruptionReason %s", got)
	}
}

// The object decodes, field for field, into Karpenter's own Go type: what
// Nodewright writes is what Karpenter (and its users' tools) read.
func TestDecodesAsKarpentersType(t *testing.T) {
	rec := record(state.Initialized)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1"}, Spec: corev1.NodeSpec{ProviderID: rec.ProviderID},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m")}}}
	ours, err := json.Marshal(Desired(Input{Record: rec, Node: node, Pool: pool(), Now: t0.Add(10 * time.Minute)}))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(ours))
	dec.DisallowUnknownFields()
	theirs := &karpv1.NodeClaim{}
	if err := dec.Decode(theirs); err != nil {
		t.Fatalf("Karpenter's type refuses %s: %v", ours, err)
	}
	if theirs.Status.NodeName != "ip-10-0-0-1" || !theirs.StatusConditions().Root().IsTrue() || theirs.Spec.NodeClassRef.Name != "default" ||
		theirs.Spec.ExpireAfter.Duration == nil || *theirs.Spec.ExpireAfter.Duration != 720*time.Hour || theirs.Status.Allocatable.Cpu().MilliValue() != 1930 {
		t.Errorf("Karpenter reads %+v", theirs)
	}
	back, err := json.Marshal(theirs)
	if err != nil {
		t.Fatal(err)
	}
	round := &NodeClaim{}
	if err := json.Unmarshal(back, round); err != nil || round.Status.ProviderID != rec.ProviderID {
		t.Errorf("Karpenter's object does not read back: %v %+v", err, round.Status)
	}
}

// Records without objects get them; objects in step are left alone;
// Nodewright's objects without records go, and Karpenter's stay.
func TestPlanSync(t *testing.T) {
	rec := record(state.Initialized)
	now := t0.Add(3 * time.Minute)
	want := Desired(Input{Record: rec, Pool: pool(), Now: now})
	same := roundTrip(t, want)
	stale := roundTrip(t, Desired(Input{Record: record(state.Registered), Pool: pool(), Now: now}))
	noFinalizer := roundTrip(t, want)
	noFinalizer.Finalizers = nil
	orphan := roundTrip(t, want)
	orphan.Name = "default-gone"
	deleting := roundTrip(t, orphan)
	deleting.Name, deleting.DeletionTimestamp = "default-going", &metav1.Time{Time: now}
	karpenters := roundTrip(t, orphan)
	karpenters.Name, karpenters.Labels = "karpenter-own", map[string]string{apis.LabelNodePool: "default"}

	for _, c := range []struct {
		name                                  string
		current                               []*NodeClaim
		create, update, meta, delete, release int
	}{
		{"missing", nil, 1, 0, 0, 0, 0},
		{"in step", []*NodeClaim{same}, 0, 0, 0, 0, 0},
		{"stale status", []*NodeClaim{stale}, 0, 1, 0, 0, 0},
		{"finalizer lost", []*NodeClaim{noFinalizer}, 0, 1, 1, 0, 0},
		{"no record", []*NodeClaim{same, orphan}, 0, 0, 0, 1, 0},
		{"deleted, no record", []*NodeClaim{same, deleting}, 0, 0, 0, 0, 1},
		{"Karpenter's", []*NodeClaim{same, karpenters}, 0, 0, 0, 0, 0},
	} {
		p := PlanSync([]*NodeClaim{want}, c.current)
		meta := 0
		for _, u := range p.Update {
			if u.Meta != nil {
				meta++
			}
		}
		if len(p.Create) != c.create || len(p.Update) != c.update || meta != c.meta || len(p.Delete) != c.delete || len(p.Release) != c.release {
			t.Errorf("%s: plan %+v", c.name, p)
		}
	}
	if got := Deleted([]*NodeClaim{same, deleting, karpenters}); len(got) != 1 || got[0] != "default-going" {
		t.Errorf("Deleted %v", got)
	}
}

// roundTrip is the object as the API server would return it.
func roundTrip(t *testing.T, nc *NodeClaim) *NodeClaim {
	t.Helper()
	b, err := json.Marshal(nc)
	if err != nil {
		t.Fatal(err)
	}
	out := &NodeClaim{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// fakeAPI answers every call with err.
type fakeAPI struct{ err error }

func (f fakeAPI) ListNodeClaims(context.Context) ([]json.RawMessage, error) { return nil, f.err }
func (f fakeAPI) CreateNodeClaim(context.Context, []byte) ([]byte, error)   { return nil, f.err }
func (f fakeAPI) PatchNodeClaim(context.Context, string, bool, []byte) ([]byte, error) {
	return nil, f.err
}
func (f fakeAPI) DeleteNodeClaim(context.Context, string) error { return f.err }

// A cluster without the NodeClaim CRD answers a create with 404: that is
// ErrNotInstalled, which the launch path does not log as a failure.
func TestEnsureWithoutCRD(t *testing.T) {
	o := &Objects{API: fakeAPI{err: apierrors.NewNotFound(schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}, "")}}
	if _, err := o.Ensure(context.Background(), Desired(Input{Record: record(state.Launched), Now: t0})); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Ensure without the CRD: %v, want ErrNotInstalled", err)
	}
}

// A record adopted from Karpenter takes its NodeClaim object over: the
// object keeps its spec and Karpenter's finalizer, and gets Nodewright's
// label and the record's status.
func TestPlanSyncTakesOverAdoptedObject(t *testing.T) {
	rec := record(state.Initialized)
	now := t0.Add(3 * time.Minute)
	theirs := roundTrip(t, Desired(Input{Record: rec, Pool: pool(), Now: now}))
	delete(theirs.Labels, LabelManagedBy)
	theirs.Status.Conditions = nil
	if theirs.Managed() {
		t.Fatal("Karpenter's object reads as Nodewright's")
	}
	p := PlanSync([]*NodeClaim{Desired(Input{Record: rec, Pool: pool(), Now: now})}, []*NodeClaim{theirs})
	if len(p.Create)+len(p.Delete)+len(p.Release) != 0 || len(p.Update) != 1 {
		t.Fatalf("plan %+v: want one update of Karpenter's object", p)
	}
	u := p.Update[0]
	if u.Meta == nil || u.Meta.Labels[LabelManagedBy] == "" || u.Meta.Finalizers != nil || u.Status == nil || len(u.Status.Conditions) == 0 {
		t.Errorf("update %+v: want Nodewright's label (the finalizer kept as it is) and the record's status", u)
	}
}

// An adopted node's object that Karpenter was deleting is labelled
// Nodewright's (only the label: no finalizer is added to an object being
// deleted), so that its deletion is carried out and its finalizer
// released.
func TestPlanSyncLabelsAnAdoptedObjectBeingDeleted(t *testing.T) {
	rec := record(state.Initialized)
	now := t0.Add(3 * time.Minute)
	theirs := roundTrip(t, Desired(Input{Record: rec, Pool: pool(), Now: now}))
	delete(theirs.Labels, LabelManagedBy)
	theirs.DeletionTimestamp = &metav1.Time{Time: now}
	if got := Deleted([]*NodeClaim{theirs}); len(got) != 0 {
		t.Fatalf("Karpenter's object being deleted is taken as Nodewright's: %v", got)
	}
	p := PlanSync([]*NodeClaim{Desired(Input{Record: rec, Pool: pool(), Now: now})}, []*NodeClaim{theirs})
	if len(p.Update) != 1 || p.Update[0].Meta == nil || p.Update[0].Meta.Labels[LabelManagedBy] == "" ||
		p.Update[0].Meta.Finalizers != nil || p.Update[0].Meta.OwnerReferences != nil {
		t.Fatalf("plan %+v: want the label alone written", p)
	}
	theirs.Labels[LabelManagedBy] = p.Update[0].Meta.Labels[LabelManagedBy]
	if got := Deleted([]*NodeClaim{theirs}); len(got) != 1 {
		t.Errorf("labelled, its deletion is not carried out: %v", got)
	}
}
