package kubeaccess

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// TestNodeClaimObjectsUnderRBAC: with the provision function's identity
// and only what rbac.yaml grants, a NodeClaim object is created with its
// status, accepted by the CRD's schema (Karpenter's), brought in step,
// deleted under its finalizer and released, as a sweep does; and the
// status of a NodePool and of an EC2NodeClass is written, as a round does.
func TestNodeClaimObjectsUnderRBAC(t *testing.T) {
	ctx := context.Background()
	rc, err := provider(roleConfig(t, "provision"), cloud.Cluster.Name).RESTConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kube.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	applyRBAC(t)
	objs := &nodeclaim.Objects{API: kc}
	eventually(t, 20*time.Second, "RBAC in force", func() (bool, error) {
		_, err := objs.List(ctx)
		return err == nil, err
	})
	t0 := time.Now().UTC().Truncate(time.Second)
	rec := &state.NodeClaim{
		Name: "rbac-probe-nc", NodePool: "default", NodeClass: "default", Phase: state.Launched, CreatedAt: t0, LaunchedAt: t0,
		InstanceID: "i-0rbac", InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot", ProviderID: "aws:///us-east-1a/i-0rbac",
		Claim: scheduling.NodeClaim{Requirements: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
		}},
	}
	uid, err := objs.Ensure(ctx, nodeclaim.Desired(nodeclaim.Input{Record: rec, Now: t0}))
	if err != nil || uid == "" {
		t.Fatalf("create: %q %v", uid, err)
	}
	t.Cleanup(func() {
		_ = cloud.Kube.Discovery().RESTClient().Delete().AbsPath("/apis/karpenter.sh/v1/nodeclaims/rbac-probe-nc").Do(ctx).Error()
	})
	current, err := objs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got *nodeclaim.NodeClaim
	for _, c := range current {
		if c.Name == rec.Name {
			got = c
		}
	}
	if got == nil || got.Status.ProviderID != rec.ProviderID || got.Condition(nodeclaim.ConditionLaunched) == nil || !got.HasFinalizer() {
		t.Fatalf("listed %+v", got)
	}
	// Registered: the status is brought in step, and then nothing is left.
	rec.Phase, rec.RegisteredAt = state.Registered, t0.Add(time.Second)
	desired := []*nodeclaim.NodeClaim{nodeclaim.Desired(nodeclaim.Input{Record: rec, Now: t0})}
	plan := nodeclaim.PlanSync(desired, current)
	if _, err := objs.Apply(ctx, plan, current); err != nil || len(plan.Update) != 1 {
		t.Fatalf("update %+v: %v", plan, err)
	}
	if current, err = objs.List(ctx); err != nil {
		t.Fatal(err)
	}
	if p := nodeclaim.PlanSync(desired, current); !p.Empty() {
		t.Errorf("after the update, still %+v", p)
	}
	// A NodePool's status, written as the round writes it.
	pool := []byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"rbac-probe-np"},` +
		`"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]}}}}`)
	admin := cloud.Kube.Discovery().RESTClient()
	if err := admin.Post().AbsPath("/apis/karpenter.sh/v1/nodepools").SetHeader("Content-Type", "application/json").Body(pool).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete().AbsPath("/apis/karpenter.sh/v1/nodepools/rbac-probe-np").Do(ctx).Error() })
	if err := kc.PatchNodePoolStatus(ctx, "rbac-probe-np", []byte(`{"status":{"nodes":2}}`)); err != nil {
		t.Errorf("write a NodePool's status: %v", err)
	}
	class := []byte(`{"apiVersion":"karpenter.k8s.aws/v1","kind":"EC2NodeClass","metadata":{"name":"rbac-probe-nc"},"spec":{"role":"nodes"}}`)
	if err := admin.Post().AbsPath("/apis/karpenter.k8s.aws/v1/ec2nodeclasses").SetHeader("Content-Type", "application/json").Body(class).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.Delete().AbsPath("/apis/karpenter.k8s.aws/v1/ec2nodeclasses/rbac-probe-nc").Do(ctx).Error()
	})
	if err := kc.PatchNodeClassStatus(ctx, "rbac-probe-nc", []byte(`{"status":{"subnets":[{"id":"subnet-1","zone":"us-east-1a"}]}}`)); err != nil {
		t.Errorf("write an EC2NodeClass's status: %v", err)
	}
	// The record gone: deleted, then released by the next pass.
	for pass := 0; pass < 2; pass++ {
		if current, err = objs.List(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := objs.Apply(ctx, nodeclaim.PlanSync(nil, current), current); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	err = cloud.Kube.Discovery().RESTClient().Get().AbsPath("/apis/karpenter.sh/v1/nodeclaims/rbac-probe-nc").Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Errorf("after delete and release: %v, want not found", err)
	}
}
