package orchestration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/handover"
	"github.com/nodewright/nodewright/shared/provision"
)

// karpenterSource is the rig's cluster with Karpenter's controller in it.
type karpenterSource struct {
	*fakeSource
	c *handover.Controller
}

func (s karpenterSource) View(ctx context.Context) (*provision.View, error) {
	v, err := s.fakeSource.View(ctx)
	if v != nil {
		v.Karpenter = s.c
	}
	return v, err
}

// TestTickStartsNothingWhileKarpenterRuns: a tick that finds Karpenter's
// controller running decides nothing and starts no action, and says why;
// without it the same tick starts the decided action.
func TestTickStartsNothingWhileKarpenterRuns(t *testing.T) {
	for _, tc := range []struct {
		name      string
		karpenter *handover.Controller
		wantStart bool
	}{
		{"Karpenter running", &handover.Controller{Namespace: "karpenter", Holder: "k-1", Until: t0.Add(10 * time.Second)}, false},
		{"Karpenter gone", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.e.Source = karpenterSource{r.src, tc.karpenter}
			decided := 0
			run := &Run{Store: tickStore{runStore{s: r.store}}, Exec: r.e, Classes: fakeClasses{},
				Decide: func(disruption.Inputs) ([]disruption.Command, disruption.Report) {
					decided++
					return []disruption.Command{command(false)}, disruption.Report{Candidates: 1}
				},
				Wait: func(context.Context, time.Duration) error { return context.Canceled },
			}
			rep, _ := run.Tick(context.Background())
			if started := rep.Started != nil; started != tc.wantStart || (decided > 0) != tc.wantStart {
				t.Fatalf("started %v after %d decisions, want started %v", rep.Started, decided, tc.wantStart)
			}
			if (rep.Standby != "") == tc.wantStart {
				t.Errorf("standby %q", rep.Standby)
			}
			if !tc.wantStart && !strings.Contains(rep.Standby, "karpenter/karpenter-leader-election") {
				t.Errorf("standby %q does not name the Lease", rep.Standby)
			}
		})
	}
}
