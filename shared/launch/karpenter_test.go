package launch

import (
	"errors"
	"testing"

	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

func TestKarpenterTwins(t *testing.T) {
	var rec metrics.Recorder
	l := &Launcher{Metrics: &rec}
	l.karpenterCreated(&state.NodeClaim{Name: "a", NodePool: "default", Reason: reasonProvisioning})
	l.karpenterCreated(&state.NodeClaim{Name: "b", NodePool: "gpu", Reason: "replacement for x: consolidation single-node (c-1)", Claim: scheduling.NodeClaim{MinValuesRelaxed: true}})
	l.karpenterLaunchFailed(errors.New("boom"), 3)
	created := rec.Points(metrics.KarpenterNodeClaimsCreated)
	want := []metrics.Dims{
		{metrics.LabelReason: "provisioned", metrics.LabelNodePool: "default", metrics.LabelMinValuesRelaxed: "false"},
		{metrics.LabelReason: "replacement", metrics.LabelNodePool: "gpu", metrics.LabelMinValuesRelaxed: "true"},
	}
	if len(created) != 2 {
		t.Fatalf("created %+v", created)
	}
	for i, w := range want {
		for k, v := range w {
			if created[i].Dims[k] != v {
				t.Errorf("created[%d] %s = %q, want %q", i, k, created[i].Dims[k], v)
			}
		}
	}
	errs := rec.Points(metrics.KarpenterCloudProviderErrors)
	if len(errs) != 1 || errs[0].Value != 3 || errs[0].Dims[metrics.LabelMethod] != "Create" || errs[0].Dims[metrics.LabelError] != metrics.ErrorUnknown {
		t.Errorf("cloud provider errors %+v", errs)
	}
}
