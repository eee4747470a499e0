// Package interruption_test proves the interruption function end to end on
// the local cloud: EventBridge events reach the queue, the handler gets them
// in SQS batch form, and interrupted nodes are replaced, drained under
// their PodDisruptionBudgets and terminated, once per instance however
// often a message comes. main_test.go says how the tests share one local
// cloud.
package interruption_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	awsevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/events"
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/interruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud/cloudfault"
)

// oneNodePool is a test pool whose nodes hold many small pods: one spot
// type, so a Deployment lands on one node.
func oneNodePool(t *testing.T, name string) *apis.NodePool {
	return oneNodePoolOf(t, name, "c6g.2xlarge")
}

// oneNodePoolOf is oneNodePool on another type: an interruption marks its
// spot offering unavailable for 3 minutes, and the tests run at once, so
// each test's pools have types of their own.
func oneNodePoolOf(t *testing.T, name, instanceType string) *apis.NodePool {
	return suite.Pool(t, name, func(np *apis.NodePool) {
		np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
			{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}},
			{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
		}
	})
}

// running deploys app on pool with n pods and waits for them on one node,
// returning it; the messages that name its instance go to h's queues.
func running(t *testing.T, h *harness.Harness, pool, app string, n int) *corev1.Node {
	t.Helper()
	c := harness.Ctx(t)
	if err := harness.Deploy(c, suite.LC, harness.OnPool(pool, app, n, "500m", "256Mi")); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, suite.LC, "default", app, n, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Hint(c, "default", app); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", app, n, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	nodes, err := harness.NodesOf(c, suite.LC, "default", app)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("%s runs on %d nodes (%v), want one", app, len(nodes), err)
	}
	for _, n := range nodes {
		post.own(t, harness.InstanceOf(n), h.Queues().URL)
		return n
	}
	return nil
}

// TestSpotInterruptionWithPDB: a spot interruption on a node running 10
// pods under a PDB allowing 1 unavailable, delivered as AWS does
// (EventBridge event, SQS, the handler in batch form): the replacement is
// launched before the first eviction, the PDB is never violated, every pod
// runs again within the two-minute notice, the Node is gone and the
// instance terminated.
func TestSpotInterruptionWithPDB(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePool(t, "spot")
	h := newHarness(t, "spot")
	node := running(t, h, "spot", "spotapp", 10)
	if err := harness.PDB(c, suite.LC, "default", "spotapp", 1); err != nil {
		t.Fatal(err)
	}
	watch, err := harness.WatchPDB(c, suite.LC, "default", "spotapp", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	firstGone := firstEviction(t, "spotapp")
	disrupted := watchDisrupted(t, node.Name)
	instance := harness.InstanceOf(node)
	start := time.Now()
	if err := cloudfault.Inject(c, suite.LC.AWS, cloudfault.Spot, instance, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	handled, failed, err := drain(c, h, 30*time.Second)
	if err != nil || handled == 0 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v", handled, failed, err)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "spotapp", 10, 2*time.Minute-time.Since(start)); err != nil {
		t.Fatalf("within the notice: %v", err)
	}
	took := time.Since(start)
	st, _ := harness.Store(suite.LC)
	a, err := st.GetAction(c, "interruption-"+instance)
	if err != nil {
		t.Fatal(err)
	}
	if a.Step != state.StepDone || len(a.Replacements) == 0 || len(a.Stranded) != 0 {
		t.Errorf("action %+v: want done, with replacements, nothing stranded", a)
	}
	rep, err := st.GetNodeClaim(c, a.Replacements[0])
	if err != nil {
		t.Fatal(err)
	}
	if first := firstGone(); first.IsZero() || !rep.CreatedAt.Before(first) {
		t.Errorf("replacement %s recorded at %v, first eviction at %v: want the replacement first", rep.Name, rep.CreatedAt, first)
	}
	// `nodewright explain` finds the replacement: a decision names the
	// NodeClaim it gave the node's pods, and why.
	ds, err := st.Decisions(c, start.Add(-time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	replaced := false
	for _, d := range ds {
		if d.Kind != "replacement" || !strings.Contains(d.Summary, "replacement for ") {
			continue
		}
		for pod := range d.Pods {
			if nc, ok := d.NodeClaimOf(pod); ok && nc.Name == rep.Name && nc.PricePerHour > 0 {
				replaced = true
			}
		}
	}
	if !replaced {
		t.Errorf("no replacement decision gives a pod NodeClaim %s (%d decisions)", rep.Name, len(ds))
	}
	if m := watch.Max(); m > 1 {
		t.Errorf("the PDB allows 1 unavailable; %d were at once", m)
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, node.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("node %s still exists", node.Name)
	}
	ids, _ := h.PoolInstances(c, "spot")
	for _, id := range ids {
		if id == instance {
			t.Errorf("instance %s still runs", instance)
		}
	}
	if tainted, cordoned := disrupted(); !tainted || !cordoned {
		t.Errorf("node %s seen tainted karpenter.sh/disrupted:NoSchedule %v, cordoned %v: want both before it went", node.Name, tainted, cordoned)
	}
	offs, err := st.Unavailable(c)
	if err != nil {
		t.Fatal(err)
	}
	marked := false
	for _, o := range offs {
		if o.InstanceType == node.Labels[corev1.LabelInstanceTypeStable] && o.Zone == node.Labels[corev1.LabelTopologyZone] && o.CapacityType == apis.CapacityTypeSpot {
			marked = true
		}
	}
	if !marked {
		t.Errorf("unavailable offerings %+v: want %s spot in %s", offs, node.Labels[corev1.LabelInstanceTypeStable], node.Labels[corev1.LabelTopologyZone])
	}
	if sum, _ := h.Metrics.Sum(metrics.Interruptions, map[string]string{metrics.DimKind: "SpotInterruption"}); sum < 1 {
		t.Errorf("metric %s{SpotInterruption}: %v, want the message counted", metrics.Interruptions, sum)
	}
	for _, m := range []string{metrics.InterruptionToReplacement, metrics.InterruptionToDrained} {
		pts := h.Metrics.Points(m)
		if len(pts) != 1 || pts[0].Value <= 0 || pts[0].Value > 120 {
			t.Errorf("metric %s: %+v, want one value within the notice", m, pts)
		}
	}
	if sum, _ := h.Metrics.Sum(metrics.PodsEvicted, map[string]string{metrics.DimReason: state.KindInterruption}); sum != 10 {
		t.Errorf("metric %s{interruption}: %v, want the 10 pods", metrics.PodsEvicted, sum)
	}
	if sum, _ := h.Metrics.Sum(metrics.InterruptionMessagesFailed, nil); sum != 0 {
		t.Errorf("metric %s: %v, want none", metrics.InterruptionMessagesFailed, sum)
	}
	// Karpenter's names, with Karpenter's labels.
	for _, c := range []struct {
		name string
		dims map[string]string
		min  float64
	}{
		{metrics.KarpenterInterruptionReceivedMessages, map[string]string{metrics.LabelMessageType: "spot_interrupted"}, 1},
		{metrics.KarpenterNodeClaimsDisrupted, map[string]string{metrics.LabelReason: "spot_interrupted", metrics.LabelNodePool: "spot", metrics.LabelCapacityType: apis.CapacityTypeSpot}, 1},
		{metrics.KarpenterNodeClaimsTerminated, map[string]string{metrics.LabelNodePool: "spot", metrics.LabelZone: node.Labels[corev1.LabelTopologyZone]}, 1},
		{metrics.KarpenterNodesTerminated, map[string]string{metrics.LabelNodePool: "spot"}, 1},
		{metrics.KarpenterNodeClaimsCreated, map[string]string{metrics.LabelReason: "replacement"}, 1},
	} {
		if sum, _ := h.Metrics.Sum(c.name, c.dims); sum < c.min {
			t.Errorf("metric %s%v: %v, want at least %v", c.name, c.dims, sum, c.min)
		}
	}
	t.Logf("spot interruption: all 10 pods Running again %s after the message (replacement launched %s after it)",
		took.Round(100*time.Millisecond), rep.CreatedAt.Sub(start).Round(100*time.Millisecond))
}

// watchDisrupted watches a Node and returns a function that tells whether
// it was ever seen tainted karpenter.sh/disrupted:NoSchedule, and cordoned.
func watchDisrupted(t *testing.T, node string) func() (tainted, cordoned bool) {
	t.Helper()
	seen, err := harness.WatchDisrupted(harness.Ctx(t), suite.LC, node)
	if err != nil {
		t.Fatal(err)
	}
	return seen
}

// firstEviction watches app's pods and returns a function that tells when the
// first of them began terminating (an eviction or a deletion).
func firstEviction(t *testing.T, app string) func() time.Time {
	t.Helper()
	first, err := harness.FirstTermination(harness.Ctx(t), suite.LC, "default", app)
	if err != nil {
		t.Fatal(err)
	}
	return first
}

// TestDuplicatesDoNothingNew: the same message delivered three times, and
// two different messages for one instance: one replacement, one drain.
func TestDuplicatesDoNothingNew(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePoolOf(t, "dup", "c6gd.2xlarge")
	h := newHarness(t, "dup")
	node := running(t, h, "dup", "dupapp", 4)
	instance := harness.InstanceOf(node)
	now := time.Now()
	spot, _ := harness.Event(events.SpotInterruptionWarning, "evt-dup-1", now, "", instance)
	cr, _ := harness.Event(events.CapacityReservationInterrupted, "evt-dup-2", now, "", instance)
	for _, b := range [][]byte{spot, spot, spot, cr} {
		if err := h.Send(c, b); err != nil {
			t.Fatal(err)
		}
	}
	handled, failed, err := drain(c, h, 30*time.Second)
	if err != nil || handled < 4 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v; want our 4 handled (and any state changes other tests' terminations sent)", handled, failed, err)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "dupapp", 4, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	st, _ := harness.Store(suite.LC)
	acts, _ := st.Actions(c)
	var ours []*state.Action
	for _, a := range acts {
		if strings.HasSuffix(a.ID, instance) {
			ours = append(ours, a)
		}
	}
	if len(ours) != 1 || len(ours[0].Replacements) != 1 || len(ours[0].Messages) == 0 {
		for _, a := range ours {
			t.Logf("action %+v", *a)
		}
		t.Fatalf("%d actions for %s: want one, with one replacement", len(ours), instance)
	}
	recs, _ := harness.PoolRecords(c, st, "dup")
	if len(recs) != 1 || recs[0].Name != ours[0].Replacements[0] {
		t.Errorf("records %d: want only the one replacement left", len(recs))
	}
}

// TestMalformedMessageReachesTheDLQ: one batch carries a body that is not
// JSON beside two valid messages for our instances (a spot interruption
// and a rebalance recommendation): the valid ones are handled (the node
// replaced and drained; a RebalanceRecommended event), the malformed one
// comes back as a batch item failure at each delivery and rests in the DLQ
// after the queue's receive limit; every failure is counted.
func TestMalformedMessageReachesTheDLQ(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePoolOf(t, "malspot", "r7g.2xlarge")
	oneNodePoolOf(t, "malrebal", "c8g.2xlarge")
	h := newHarness(t, "mal")
	spotNode := running(t, h, "malspot", "malspotapp", 2)
	rebalNode := running(t, h, "malrebal", "malrebalapp", 2)
	if _, _, err := drain(c, h, time.Second); err != nil { // what EventBridge delivered for our instances so far
		t.Fatal(err)
	}
	bad := `this is not JSON {"id":"evt-bad","detail-type":"EC2 Spot Instance Interruption Warning"`
	spot, _ := harness.Event(events.SpotInterruptionWarning, "evt-mal-spot", time.Now(), "", harness.InstanceOf(spotNode))
	rebal, _ := harness.Event(events.RebalanceRecommendation, "evt-mal-rebal", time.Now(), "", harness.InstanceOf(rebalNode))
	ours := map[string]string{bad: "malformed", string(spot): "spot", string(rebal): "rebalance"}
	var mu sync.Mutex
	results := map[string][]bool{} // kind -> success at each delivery
	h.Interruption.AfterMessage = func(m awsevents.SQSMessage, _ []interruption.Outcome, err error) {
		mu.Lock()
		defer mu.Unlock()
		if k, ok := ours[m.Body]; ok {
			results[k] = append(results[k], err == nil)
		}
	}
	for _, b := range []string{bad, string(spot), string(rebal)} {
		if err := h.Send(c, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := harness.Poll(c, 2*time.Minute, "the malformed message in the DLQ", func() (bool, string, error) {
		if _, _, err := drain(c, h, time.Second); err != nil {
			return false, "", err
		}
		dlq, err := h.DLQ(c)
		mu.Lock()
		defer mu.Unlock()
		return err == nil && len(dlq) == 1 && dlq[0] == bad, fmt.Sprintf("deliveries %v, DLQ %d", results, len(dlq)), err
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := fmt.Sprint(results)
	mu.Unlock()
	if want := "map[malformed:[false false false] rebalance:[true] spot:[true]]"; got != want {
		t.Errorf("deliveries %s, want %s: the valid ones handled once, the malformed one failed at each of its 3 receives", got, want)
	}
	together := false
	for _, b := range h.Batches() {
		if slices.Contains(b, bad) && slices.Contains(b, string(spot)) && slices.Contains(b, string(rebal)) {
			together = true
		}
	}
	if !together {
		t.Errorf("batches %d: the three messages never came in one batch", len(h.Batches()))
	}
	if sum, _ := h.Metrics.Sum(metrics.InterruptionMessagesFailed, nil); sum != 3 {
		t.Errorf("metric %s: %v, want 3 (one per failed delivery)", metrics.InterruptionMessagesFailed, sum)
	}
	// The valid ones did their work.
	if err := harness.WaitRunning(c, suite.LC, "default", "malspotapp", 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	st, _ := harness.Store(suite.LC)
	if a, err := st.GetAction(c, "interruption-"+harness.InstanceOf(spotNode)); err != nil || a.Step != state.StepDone || len(a.Replacements) != 1 {
		t.Errorf("spot interruption in the batch: action %+v %v; want done with one replacement", a, err)
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, spotNode.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("interrupted node %s still exists", spotNode.Name)
	}
	if !nodeEvent(t, rebalNode.Name, "RebalanceRecommended") {
		t.Errorf("no RebalanceRecommended event on %s", rebalNode.Name)
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, rebalNode.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("node %s is gone after a rebalance recommendation: %v", rebalNode.Name, err)
	}
	for _, kind := range []string{"SpotInterruption", "RebalanceRecommendation"} {
		if sum, _ := h.Metrics.Sum(metrics.Interruptions, map[string]string{metrics.DimKind: kind}); sum != 1 {
			t.Errorf("metric %s{%s}: %v, want 1", metrics.Interruptions, kind, sum)
		}
	}
}

// nodeEvent reports whether a Kubernetes event with reason names node
// (waiting a little: events are written asynchronously).
func nodeEvent(t *testing.T, node, reason string) bool {
	t.Helper()
	c := harness.Ctx(t)
	return harness.Poll(c, 30*time.Second, reason+" on "+node, func() (bool, string, error) {
		evs, err := suite.LC.Kube.CoreV1().Events("").List(c, metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
		if err != nil {
			return false, "", err
		}
		for _, e := range evs.Items {
			if e.Reason == reason {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items)), nil
	}) == nil
}

// TestDrainOutlivesItsInvocation: a node replaced proactively (a
// rebalance recommendation on an annotated pool: no deadline) whose pods a
// PDB allowing nothing holds: the invocation ends with the node tainted,
// cordoned and drained of nothing, the action at draining and its
// replacement launched; once the PDB allows one disruption, the provision
// function's sweep carries the drain on (no message needed) until the node
// is gone, never violating the PDB.
func TestDrainOutlivesItsInvocation(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	suite.Pool(t, "outlive", func(np *apis.NodePool) {
		np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
			{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m8g.2xlarge"}},
			{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
		}
		np.Annotations = map[string]string{interruption.AnnotationRebalance: interruption.RebalanceReplace}
	})
	h := newHarness(t, "outlive")
	node := running(t, h, "outlive", "outliveapp", 3)
	if err := harness.PDB(c, suite.LC, "default", "outliveapp", 0); err != nil {
		t.Fatal(err)
	}
	watch, err := harness.WatchPDB(c, suite.LC, "default", "outliveapp", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	instance := harness.InstanceOf(node)
	if err := cloudfault.Inject(c, suite.LC.AWS, cloudfault.Rebalance, instance, 0); err != nil {
		t.Fatal(err)
	}
	// An invocation of 75 s: the drain stops 10 s before its end.
	short, cancel := context.WithTimeout(c, 75*time.Second)
	handled, failed, err := drain(short, h, 30*time.Second)
	cancel()
	if err != nil || handled == 0 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v", handled, failed, err)
	}
	st, _ := harness.Store(suite.LC)
	a, err := st.GetAction(c, "interruption-"+instance)
	if err != nil || a.Step != state.StepDraining || len(a.Replacements) != 1 || a.Evicted != 0 {
		t.Fatalf("after the invocation: action %+v %v; want draining, one replacement, nothing evicted", a, err)
	}
	n, err := suite.LC.Kube.CoreV1().Nodes().Get(c, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", node.Name, err)
	}
	if !n.Spec.Unschedulable || !slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool {
		return tn.Key == apis.TaintKeyDisrupted && tn.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("node %s: cordoned %v, taints %v; want cordoned and tainted karpenter.sh/disrupted:NoSchedule", node.Name, n.Spec.Unschedulable, n.Spec.Taints)
	}
	pods, _ := harness.Pods(c, suite.LC, "default", "outliveapp")
	for _, p := range pods {
		if p.Spec.NodeName != node.Name || p.DeletionTimestamp != nil {
			t.Errorf("pod %s on %s (deleting %v): the PDB allows nothing, want it in place", p.Name, p.Spec.NodeName, p.DeletionTimestamp != nil)
		}
	}

	// The PDB allows one disruption now; the sweep carries the drain on.
	if err := suite.LC.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(c, "outliveapp", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.PDB(c, suite.LC, "default", "outliveapp", 1); err != nil {
		t.Fatal(err)
	}
	sweeps := 0
	if err := harness.Poll(c, 3*time.Minute, "the sweep to finish the drain", func() (bool, string, error) {
		if err := h.Sweep(c); err != nil {
			return false, "", err
		}
		sweeps++
		x, err := st.GetAction(c, "interruption-"+instance)
		if err != nil {
			return false, "", err
		}
		return x.Step == state.StepDone, fmt.Sprintf("step %s after %d sweeps", x.Step, sweeps), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "outliveapp", 3, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, node.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("node %s still exists", node.Name)
	}
	nodes, _ := harness.NodesOf(c, suite.LC, "default", "outliveapp")
	if _, still := nodes[node.Name]; still || len(nodes) != 1 {
		t.Errorf("outliveapp runs on %v, want the replacement only", slices.Sorted(maps.Keys(nodes)))
	}
	if m := watch.Max(); m > 1 {
		t.Errorf("the PDB allows at most 1 unavailable; %d were at once", m)
	}
	// The sweep's passes are on the action's record as the handler's are.
	if x, err := st.GetAction(c, "interruption-"+instance); err != nil || x.Evicted != 3 || len(x.Stranded) != 0 {
		t.Errorf("action after the sweep: evicted %d, stranded %v, %v; want the 3 pods evicted, none stranded", x.Evicted, x.Stranded, err)
	}
	t.Logf("drain resumed by the sweep: done after %d sweeps", sweeps)
}

// TestDrainPastTheDeadlineStrandsPods: a spot warning handled late (95 s
// into the two-minute notice) on a node whose pods a PDB allowing nothing
// holds: the drain cannot finish before the instance dies, so at the
// deadline the pods left are deleted, and the action records them as
// stranded, with its cause; they run again on the replacement.
func TestDrainPastTheDeadlineStrandsPods(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePoolOf(t, "late", "r8g.2xlarge")
	h := newHarness(t, "late")
	node := running(t, h, "late", "lateapp", 3)
	if err := harness.PDB(c, suite.LC, "default", "lateapp", 0); err != nil {
		t.Fatal(err)
	}
	instance := harness.InstanceOf(node)
	warned := time.Now().Add(-95 * time.Second)
	ev, _ := harness.Event(events.SpotInterruptionWarning, "evt-late", warned, "", instance)
	if err := h.Send(c, ev); err != nil {
		t.Fatal(err)
	}
	if handled, failed, err := drain(c, h, 30*time.Second); err != nil || handled == 0 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v", handled, failed, err)
	}
	st, _ := harness.Store(suite.LC)
	a, err := st.GetAction(c, "interruption-"+instance)
	if err != nil {
		t.Fatal(err)
	}
	if a.Step != state.StepDone || len(a.Stranded) != 3 || a.Evicted != 0 || !strings.Contains(a.Cause, "3 pods could not be moved before the deadline") {
		t.Errorf("action %+v: want done, the 3 pods stranded (none evicted), the cause saying so", a)
	}
	for _, p := range a.Stranded {
		if !strings.HasPrefix(p, "default/lateapp-") {
			t.Errorf("stranded %q is not one of lateapp's pods", p)
		}
	}
	if want := warned.Truncate(time.Second).Add(2*time.Minute - 15*time.Second); !a.Deadline.Equal(want) {
		t.Errorf("deadline %v, want %v (the notice's end less the margin)", a.Deadline, want)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "lateapp", 3, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, node.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("node %s still exists", node.Name)
	}
	if sum, _ := h.Metrics.Sum(metrics.PodsEvicted, map[string]string{metrics.DimReason: state.KindInterruption}); sum != 3 {
		t.Errorf("metric %s{interruption}: %v, want the 3 pods deleted at the deadline", metrics.PodsEvicted, sum)
	}
}

// TestIgnoredEvents: a state change to running for one of our instances,
// and a spot warning for an instance that is not ours: acknowledged,
// nothing done.
func TestIgnoredEvents(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePoolOf(t, "ign", "c7gd.2xlarge")
	h := newHarness(t, "ign")
	node := running(t, h, "ign", "ignapp", 2)
	instance := harness.InstanceOf(node)
	run, _ := harness.Event(events.InstanceStateChange, "evt-running", time.Now(), "running", instance)
	other, _ := harness.Event(events.SpotInterruptionWarning, "evt-other", time.Now(), "", "i-0aaaabbbbccccdddd")
	// The queue keeps messages an hour (the stack's retention): state
	// changes of instances earlier tests ended may still be on it, and are
	// handled with these (acknowledged: not ours any more).
	for _, b := range [][]byte{run, other} {
		if err := h.Send(c, b); err != nil {
			t.Fatal(err)
		}
	}
	handled, failed, err := drain(c, h, 30*time.Second)
	if err != nil || handled < 2 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v: want this test's 2 (and any left by earlier tests) handled, none failed", handled, failed, err)
	}
	st, _ := harness.Store(suite.LC)
	if _, err := st.GetAction(c, "interruption-"+instance); err == nil {
		t.Error("a state change to running started an interruption")
	}
	recs, _ := harness.PoolRecords(c, st, "ign")
	if len(recs) != 1 || recs[0].Disruption != nil {
		t.Errorf("records %+v: want the node untouched", recs)
	}
	n, err := suite.LC.Kube.CoreV1().Nodes().Get(c, node.Name, metav1.GetOptions{})
	if err != nil || n.Spec.Unschedulable {
		t.Errorf("node %s: %v, cordoned %v", node.Name, err, n != nil && n.Spec.Unschedulable)
	}
}

// TestScheduledChangeOnTwoInstances: an AWS Health scheduled change that
// lists two of our instances: both are replaced and drained.
func TestScheduledChangeOnTwoInstances(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePoolOf(t, "health-a", "m6gd.2xlarge")
	oneNodePoolOf(t, "health-b", "m7gd.2xlarge")
	h := newHarness(t, "health")
	a := running(t, h, "health-a", "healtha", 2)
	b := running(t, h, "health-b", "healthb", 2)
	if a.Name == b.Name {
		t.Fatal("both workloads on one node")
	}
	ev, _ := harness.Event(events.HealthScheduledChange, "evt-health", time.Now(), "", harness.InstanceOf(a), harness.InstanceOf(b))
	if err := h.Send(c, ev); err != nil {
		t.Fatal(err)
	}
	handled, failed, err := drain(c, h, 30*time.Second)
	if err != nil || handled < 1 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v", handled, failed, err)
	}
	for _, app := range []string{"healtha", "healthb"} {
		if err := harness.WaitRunning(c, suite.LC, "default", app, 2, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := harness.Store(suite.LC)
	for _, n := range []*corev1.Node{a, b} {
		act, err := st.GetAction(c, "interruption-"+harness.InstanceOf(n))
		if err != nil || act.Step != state.StepDone || len(act.Replacements) != 1 {
			t.Errorf("node %s: action %+v %v; want done with one replacement", n.Name, act, err)
		}
		if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, n.Name, metav1.GetOptions{}); err == nil {
			t.Errorf("node %s still exists", n.Name)
		}
	}
}

// TestReplacementDoesNotWaitForProvision: while another invocation holds
// the provision lease (a long round in progress), a spot interruption's
// replacement is still launching within 10 s of the message. It runs
// alone (not in parallel): while it holds the lease no other test's pods
// are provisioned.
func TestReplacementDoesNotWaitForProvision(t *testing.T) {
	c := harness.Ctx(t)
	oneNodePoolOf(t, "busy", "m6g.2xlarge")
	h := newHarness(t, "busy")
	node := running(t, h, "busy", "busyapp", 4)
	st, err := harness.Store(suite.LC)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := st.Acquire(c, state.LeaseProvision, "a-long-provision-round", 5*time.Minute)
	if err != nil {
		t.Fatalf("hold the provision lease: %v", err)
	}
	t.Cleanup(func() { _, _ = st.Release(context.WithoutCancel(c), lease) })
	instance := harness.InstanceOf(node)
	start := time.Now()
	if err := cloudfault.Inject(c, suite.LC.AWS, cloudfault.Spot, instance, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if handled, failed, err := drain(c, h, 30*time.Second); err != nil || handled == 0 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v", handled, failed, err)
	}
	a, err := st.GetAction(c, "interruption-"+instance)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Replacements) == 0 {
		t.Fatalf("action %+v: no replacement while the provision lease is held", *a)
	}
	rep, err := st.GetNodeClaim(c, a.Replacements[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.CreatedAt.Sub(start); d > 10*time.Second {
		t.Errorf("replacement launching %s after the message, want within 10 s", d)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "busyapp", 4, 2*time.Minute-time.Since(start)); err != nil {
		t.Fatalf("within the notice: %v", err)
	}
}

// TestRebalanceRecommendation: by default a rebalance recommendation is
// recorded as an event on the node and nothing moves; on a NodePool
// annotated nodewright.io/rebalance: replace the node is replaced and
// drained before any interruption comes.
func TestRebalanceRecommendation(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePoolOf(t, "rebal", "c7g.2xlarge")
	suite.Pool(t, "rebalrepl", func(np *apis.NodePool) {
		np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
			{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m7g.2xlarge"}},
			{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
		}
		np.Annotations = map[string]string{interruption.AnnotationRebalance: interruption.RebalanceReplace}
	})
	h := newHarness(t, "rebal")
	kept := running(t, h, "rebal", "rebalapp", 2)
	replaced := running(t, h, "rebalrepl", "rebalreplapp", 2)
	for _, n := range []*corev1.Node{kept, replaced} {
		if err := cloudfault.Inject(c, suite.LC.AWS, cloudfault.Rebalance, harness.InstanceOf(n), 0); err != nil {
			t.Fatal(err)
		}
	}
	if handled, failed, err := drain(c, h, 30*time.Second); err != nil || handled < 2 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v", handled, failed, err)
	}
	// Default: an event on the node, the node stays, nothing launched.
	if err := harness.Poll(c, 30*time.Second, "a RebalanceRecommended event", func() (bool, string, error) {
		evs, err := suite.LC.Kube.CoreV1().Events("").List(c, metav1.ListOptions{FieldSelector: "involvedObject.name=" + kept.Name})
		if err != nil {
			return false, "", err
		}
		for _, e := range evs.Items {
			if e.Reason == "RebalanceRecommended" {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events on %s", len(evs.Items), kept.Name), nil
	}); err != nil {
		t.Error(err)
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, kept.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("node %s of the default pool is gone after a rebalance recommendation: %v", kept.Name, err)
	}
	if ids, _ := h.PoolInstances(c, "rebal"); len(ids) != 1 {
		t.Errorf("pool rebal runs %d instances, want 1 (nothing replaced by default)", len(ids))
	}
	// Annotated: replaced and gone, pods Running elsewhere.
	if err := harness.Poll(c, 2*time.Minute, "the annotated pool's node replaced", func() (bool, string, error) {
		_, err := suite.LC.Kube.CoreV1().Nodes().Get(c, replaced.Name, metav1.GetOptions{})
		return err != nil, "node still there", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "rebalreplapp", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	nodes, _ := harness.NodesOf(c, suite.LC, "default", "rebalreplapp")
	if _, still := nodes[replaced.Name]; still || len(nodes) == 0 {
		t.Errorf("rebalreplapp runs on %v, want a replacement of %s", nodes, replaced.Name)
	}
}

// TestInstanceTerminatedOutside: an instance terminated outside Nodewright
// (EC2 console, an operator): its state-change notifications come through
// the queue; the pods bound to it move to a replacement at once, whether or
// not its Node is still there, not when the pod garbage collector finds
// them 40 s later.
func TestInstanceTerminatedOutside(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePoolOf(t, "gone", "r6g.2xlarge")
	h := newHarness(t, "gone")
	node := running(t, h, "gone", "goneapp", 3)
	instance := harness.InstanceOf(node)
	start := time.Now()
	ec2c := ec2.NewFromConfig(suite.LC.AWSConfig())
	if _, err := ec2c.TerminateInstances(c, &ec2.TerminateInstancesInput{InstanceIds: []string{instance}}); err != nil {
		t.Fatal(err)
	}
	if handled, failed, err := drain(c, h, 30*time.Second); err != nil || handled == 0 || failed != 0 {
		t.Fatalf("queue: %d handled, %d failed, %v", handled, failed, err)
	}
	st, _ := harness.Store(suite.LC)
	if err := harness.Poll(c, 30*time.Second, "the interruption action done", func() (bool, string, error) {
		a, err := st.GetAction(c, "interruption-"+instance)
		if err != nil {
			return false, err.Error(), nil
		}
		return a.Step == state.StepDone, string(a.Step), nil
	}); err != nil {
		t.Fatal(err)
	}
	a, _ := st.GetAction(c, "interruption-"+instance)
	if len(a.Replacements) == 0 || a.Evicted+len(a.Stranded) != 3 {
		t.Errorf("action %+v: want a replacement and the 3 pods moved by the handler (not left to the pod GC)", *a)
	}
	if err := harness.Poll(c, 90*time.Second, "goneapp Running again off the terminated instance", func() (bool, string, error) {
		pods, err := harness.Pods(c, suite.LC, "default", "goneapp")
		if err != nil {
			return false, "", err
		}
		ok := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Spec.NodeName != node.Name {
				ok++
			}
		}
		return ok == 3, fmt.Sprintf("%d of 3 Running elsewhere", ok), nil
	}); err != nil {
		pods, _ := harness.Pods(c, suite.LC, "default", "goneapp")
		for _, p := range pods {
			t.Logf("pod %s on %q: %s deleting=%v", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
		}
		t.Fatal(err)
	}
	t.Logf("instance terminated outside: pods Running on a replacement %s after the termination", time.Since(start).Round(100*time.Millisecond))
	if _, err := st.NodeClaimByInstance(c, instance); err == nil {
		t.Errorf("the record of terminated instance %s is still there", instance)
	}
}
