package nodeclaim

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodewright/nodewright/shared/state"
)

// A NodeClaim carries its NodePool's spec.template.metadata.annotations,
// as Karpenter's do (and decodes so into Karpenter's type); a NodeClaim
// that lacks one is patched with it, keeping the annotations it has.
func TestDesiredCarriesTemplateAnnotations(t *testing.T) {
	p := pool()
	p.Spec.Template.ObjectMeta.Annotations = map[string]string{"example.com/owner": "team-a"}
	now := t0.Add(3 * time.Minute)
	want := Desired(Input{Record: record(state.Initialized), Pool: p, Now: now})
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var k karpv1.NodeClaim
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	if k.Annotations["example.com/owner"] != "team-a" {
		t.Errorf("annotations %v, want the template's", k.Annotations)
	}
	if got := Desired(Input{Record: record(state.Initialized), Pool: pool(), Now: now}).Annotations; len(got) != 0 {
		t.Errorf("a pool without template annotations gives %v", got)
	}

	current := roundTrip(t, Desired(Input{Record: record(state.Initialized), Pool: pool(), Now: now}))
	current.Annotations = map[string]string{"someone.else/note": "kept"}
	plan := PlanSync([]*NodeClaim{want}, []*NodeClaim{current})
	if len(plan.Update) != 1 || plan.Update[0].Meta == nil ||
		!maps.Equal(plan.Update[0].Meta.Annotations, map[string]string{"example.com/owner": "team-a"}) {
		t.Fatalf("plan %+v: want a metadata patch adding the template's annotation only", plan)
	}
	current.Annotations["example.com/owner"] = "team-a"
	if plan := PlanSync([]*NodeClaim{want}, []*NodeClaim{current}); len(plan.Update) != 0 {
		t.Errorf("in step, yet plan %+v", plan)
	}
}
