package provision

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/adoption"
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/handover"
	"github.com/nodewright/nodewright/shared/state"
)

// TestSweepAdoptsKarpentersNodesOnceItIsGone: a node Karpenter launched
// into a configured NodePool becomes a record only once Karpenter's
// controller is gone (not while it runs, nor while its Lease cannot be
// read); one of an unconfigured NodePool is left alone with a warning; no
// instance is terminated; a second sweep adopts nothing twice.
func TestSweepAdoptsKarpentersNodesOnceItIsGone(t *testing.T) {
	cases := []struct {
		name      string
		karpenter *handover.Controller
		unknown   bool
		adopted   bool
	}{
		{name: "Karpenter runs", karpenter: &handover.Controller{Namespace: "kube-system", Holder: "k-1", Until: t0.Add(time.Minute)}},
		{name: "its Lease cannot be read", unknown: true},
		{name: "Karpenter is gone", adopted: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-k1", UID: "node-uid",
				Labels: map[string]string{apis.LabelNodePool: "default", apis.LabelInitialized: "true"}}}
			node.Spec.ProviderID = state.ProviderIDFor("us-east-1a", "i-k1")
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}
			r, base, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) {
				return &View{Nodes: []*corev1.Node{node}, Karpenter: c.karpenter, KarpenterUnknown: c.unknown}, nil
			})
			launchedAt := t0.Add(-2 * time.Hour)
			fl := &sweepFleet{fakeFleet: base, running: []fleet.Running{
				{InstanceID: "i-k1", InstanceType: "m5.large", Zone: "us-east-1a", State: "running", LaunchTime: launchedAt, NodeClaim: "default-k1", NodePool: "default"},
				{InstanceID: "i-k2", InstanceType: "m5.large", Zone: "us-east-1a", State: "running", LaunchTime: launchedAt, NodeClaim: "gpu-k2", NodePool: "gpu"},
			}}
			r.Fleet, r.Nodes = fl, &sweepNodes{}
			ev := &fakeEvents{}
			r.Events = ev
			ctx := context.Background()
			for sweep := 0; sweep < 2; sweep++ {
				rep, err := r.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Terminated) != 0 {
					t.Fatalf("sweep %d terminated %v", sweep, rep.Terminated)
				}
				want := 0
				if c.adopted && sweep == 0 {
					want = 1
				}
				if len(rep.AdoptedFromKarpenter) != want {
					t.Fatalf("sweep %d adopted %v, want %d", sweep, rep.AdoptedFromKarpenter, want)
				}
				if c.adopted && (len(rep.NotAdopted) != 1 || rep.NotAdopted[0].Reason != adoption.NodePoolNotConfigured) {
					t.Errorf("sweep %d left alone %+v: want gpu-k2, its NodePool not configured", sweep, rep.NotAdopted)
				}
			}
			recs, _ := r.Store.NodeClaims(ctx)
			if !c.adopted {
				if len(recs) != 0 {
					t.Fatalf("records %v written while Karpenter may run", recs)
				}
				return
			}
			if len(recs) != 1 || recs[0].Name != "default-k1" || recs[0].InstanceID != "i-k1" || recs[0].Phase != state.Initialized ||
				recs[0].NodeName != "ip-k1" || !recs[0].LaunchedAt.Equal(launchedAt) || !strings.HasPrefix(recs[0].Reason, adoption.ReasonPrefix) {
				t.Fatalf("records %+v", recs)
			}
			var adopted, warned int
			for _, e := range ev.All() {
				switch {
				case strings.Contains(e, " Normal Adopted: "):
					adopted++
				case strings.HasPrefix(e, "NodeClaim//gpu-k2 Warning NotAdopted: NodePoolNotConfigured"):
					warned++
				}
			}
			if adopted != 2 || warned != 1 {
				t.Errorf("events %q: want Adopted on the NodeClaim and the Node, one NotAdopted (deduped)", ev.All())
			}
		})
	}
}
