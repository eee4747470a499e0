package handlers

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/provision"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// markingSource is a cluster whose kube-scheduler works through a burst:
// its pods, created a minute ago, are not evaluated until the lag-th
// read, and then perRead more are marked Unschedulable at every read
// (none ever when perRead is 0: pods of another scheduler).
type markingSource struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	lag     int
	perRead int
	reads   int
}

func (s *markingSource) View(context.Context) (*provision.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	marked := min(len(s.pods), max(0, s.reads-s.lag)*s.perRead)
	out := make([]*corev1.Pod, len(s.pods))
	for i, p := range s.pods {
		c := p.DeepCopy()
		if i < marked {
			c.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, LastTransitionTime: c.CreationTimestamp}}
		}
		out[i] = c
	}
	return &provision.View{Pods: out}, nil
}

// A webhook hint's invocation whose first rounds find kube-scheduler still
// working through the burst (its pods not evaluated yet, so nothing to
// launch for) keeps looking while that backlog shrinks, instead of letting
// go and leaving the marks to come to a hint gate that holds them off for
// its window; a backlog that never shrinks (another scheduler's pods) ends
// the invocation after one more look.
func TestProvisionFollowsKubeSchedulersBacklog(t *testing.T) {
	for _, tc := range []struct {
		name         string
		perRead      int
		wantCovered  int
		wantMaxRound int
	}{
		{"kube-scheduler marks 10 pods a read after a lag", 10, 30, maxFollowRounds},
		{"pods of another scheduler are never marked", 0, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := st.DistinctPods(30, 7)
			created := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
			for i, p := range pods {
				p.UID = types.UID(fmt.Sprintf("uid-%d", i))
				p.CreationTimestamp = created
				p.Status.Conditions = nil
			}
			reports, store := handleHint(t, &markingSource{pods: pods, lag: 2, perRead: tc.perRead}, nil)
			recs, err := store.NodeClaims(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			covered := map[string]bool{}
			for _, rec := range recs {
				for _, p := range rec.Claim.Pods {
					covered[p] = true
				}
			}
			for i, rep := range reports {
				t.Logf("round %d: pending %d, unevaluated %d, nominated %d, launched %d", i+1, rep.Pending, rep.Unevaluated, rep.Nominated, len(rep.Launched()))
			}
			// The last round finds every marked pod on a NodeClaim in
			// flight (launched for it, or placed in one's room).
			last := reports[len(reports)-1]
			if len(covered) < tc.wantCovered*3/4 || last.Nominated != tc.wantCovered || len(last.Launched()) != 0 {
				t.Errorf("%d pods on launched NodeClaims after %d rounds, the last nominating %d and launching %d: want %d on NodeClaims in flight",
					len(covered), len(reports), last.Nominated, len(last.Launched()), tc.wantCovered)
			}
			if len(reports) > tc.wantMaxRound {
				t.Errorf("%d rounds, want at most %d", len(reports), tc.wantMaxRound)
			}
		})
	}
}
