// Package consolidation_test proves the consolidation function end to end
// on the local cloud: its timer's event drives the handler, which removes
// and replaces Nodewright's nodes within each NodePool's policy, budgets,
// consolidateAfter, expireAfter and drift, never past a do-not-disrupt
// annotation or a PodDisruptionBudget. The tests run one at a time: each
// moves the functions' clock on, and consolidation acts on the whole
// cluster.
package consolidation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
)

var suite *harness.Suite

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, localcloud.Options{BootDelay: time.Second, InstallCRDs: true},
		func(s *harness.Suite) { suite = s }, "nodepool-default.yaml", "ec2nodeclass-default.yaml"))
}

// arm64 keeps a pool on Graviton: the drift test changes the amd64 AMI
// only, so only its own (amd64) pool drifts.
var arm64 = apis.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}

// validationWait is the validation wait in these tests (15 s in Lambda).
const validationWait = 3 * time.Second

func dur(s string) apis.NillableDuration {
	var d apis.NillableDuration
	if err := json.Unmarshal([]byte(`"`+s+`"`), &d); err != nil {
		panic(err)
	}
	return d
}

// smallPool is a test pool of one small spot type (one 1-CPU pod per node).
func smallPool(t *testing.T, name string, mutate func(*apis.NodePool)) *apis.NodePool {
	return suite.Pool(t, name, func(np *apis.NodePool) {
		np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
			{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6g.large"}},
			{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
		}
		np.Spec.Disruption.ConsolidateAfter = dur("30s")
		np.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "100%"}}
		if mutate != nil {
			mutate(np)
		}
	})
}

// launch deploys app on pool and waits until the provision function has
// its pods running.
func launch(t *testing.T, h *harness.Harness, w harness.Workload) {
	t.Helper()
	c := harness.Ctx(t)
	if err := harness.Deploy(c, suite.LC, w); err != nil {
		t.Fatal(err)
	}
	if _, err := harness.WaitSettled(c, suite.LC, w.Namespace, w.Name, w.Replicas, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Hint(c, w.Namespace, w.Name); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, suite.LC, w.Namespace, w.Name, w.Replicas, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// live returns a pool's records whose instances still run.
func live(t *testing.T, pool string) []*state.NodeClaim {
	t.Helper()
	st, err := harness.Store(suite.LC)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := harness.PoolRecords(harness.Ctx(t), st, pool)
	if err != nil {
		t.Fatal(err)
	}
	var out []*state.NodeClaim
	for _, r := range recs {
		if r.Phase != state.Terminating {
			out = append(out, r)
		}
	}
	return out
}

// tick makes one consolidation timer tick and returns what it did.
func tick(t *testing.T, h *harness.Harness) {
	t.Helper()
	if err := h.Tick(harness.Ctx(t)); err != nil {
		t.Fatalf("consolidation tick: %v", err)
	}
}

// ticksUntil ticks, moving the clock on by step before each, until cond
// holds or max ticks passed; it returns the ticks made.
func ticksUntil(t *testing.T, h *harness.Harness, step time.Duration, max int, what string, cond func() (bool, string)) int {
	t.Helper()
	last := ""
	for i := 1; i <= max; i++ {
		h.Clock.Advance(step)
		tick(t, h)
		ok, s := cond()
		if ok {
			return i
		}
		last = s
	}
	t.Fatalf("after %d ticks: %s (last: %s)", max, what, last)
	return 0
}

func price(recs []*state.NodeClaim) float64 {
	p := 0.0
	for _, r := range recs {
		p += r.PricePerHour
	}
	return p
}

// TestScaleDownConsolidates: Deployments of 30 and 40 pods on all-spot
// pools scaled to 3 and 4: within consolidateAfter plus two timer ticks the
// pool runs on fewer nodes whose price is within 10% of the plan's lower
// bound for the pods left (the issue asks 20% for 40 -> 4; the README's
// figures ask 10%), with every pod Running throughout and the PDB never
// violated. It logs the figures the README quotes.
func TestScaleDownConsolidates(t *testing.T) {
	for _, tc := range []struct{ from, to int }{{30, 3}, {40, 4}} {
		t.Run(fmt.Sprintf("%d-to-%d", tc.from, tc.to), func(t *testing.T) {
			c := harness.Ctx(t)
			pool := fmt.Sprintf("shrink%d", tc.from)
			np := suite.Pool(t, pool, func(np *apis.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = dur("30s")
				np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, arm64,
					apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}})
			})
			h := suite.Harness(t, harness.Options{ValidationWait: validationWait})
			app := pool + "app"
			w := harness.OnPool(pool, app, tc.from, "1", "1Gi")
			launch(t, h, w)
			before := live(t, pool)
			if err := harness.PDB(c, suite.LC, "default", app, 1); err != nil {
				t.Fatal(err)
			}
			if err := harness.Scale(c, suite.LC, "default", app, tc.to); err != nil {
				t.Fatal(err)
			}
			if err := harness.WaitRunning(c, suite.LC, "default", app, tc.to, time.Minute); err != nil {
				t.Fatal(err)
			}
			watch, err := harness.WatchPDB(c, suite.LC, "default", app, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Stop()
			tick(t, h) // the nodes' pods changed now: consolidateAfter counts from here
			bound := lowerBound(t, np, w, tc.to)
			ticks := ticksUntil(t, h, 31*time.Second, 2, "price within 10% of the bound", func() (bool, string) {
				recs := live(t, pool)
				return price(recs) <= 1.1*bound, fmt.Sprintf("%d nodes, $%.4f/h, bound $%.4f/h", len(recs), price(recs), bound)
			})
			after := live(t, pool)
			if len(after) >= len(before) && len(before) > 1 {
				t.Errorf("%d nodes before, %d after: want fewer", len(before), len(after))
			}
			if err := harness.WaitRunning(c, suite.LC, "default", app, tc.to, time.Minute); err != nil {
				t.Fatal(err)
			}
			if m := watch.Max(); m > 1 {
				t.Errorf("the PDB allows 1 unavailable; %d were at once", m)
			}
			evicted, removed := actionsOn(t, before)
			perNode := 0.0
			if removed > 0 {
				perNode = float64(evicted) / float64(removed)
			}
			t.Logf("%d -> %d pods (all spot): %d nodes $%.4f/h -> %d nodes $%.4f/h (lower bound $%.4f/h) after consolidateAfter + %d tick(s); %d evictions for %d nodes removed (%.1f per node)",
				tc.from, tc.to, len(before), price(before), len(after), price(after), bound, ticks, evicted, removed, perNode)
		})
	}
}

// actionsOn sums the finished consolidation actions over the given
// records: pods evicted and nodes removed.
func actionsOn(t *testing.T, recs []*state.NodeClaim) (evicted, removed int) {
	t.Helper()
	names := map[string]bool{}
	for _, r := range recs {
		names[r.Name] = true
	}
	st, err := harness.Store(suite.LC)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := st.Actions(harness.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if a.Kind != state.KindConsolidation || a.Step != state.StepDone || len(a.NodeClaims) == 0 || !names[a.NodeClaims[0]] {
			continue
		}
		evicted += a.Evicted
		removed += len(a.NodeClaims)
	}
	return evicted, removed
}

// lowerBound is the plan's lower bound for n of w's pods on pool.
func lowerBound(t *testing.T, np *apis.NodePool, w harness.Workload, n int) float64 {
	t.Helper()
	w.Replicas = n
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, harness.PodOf(w, i))
	}
	cat := catalog.Default()
	res, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*apis.NodePool{np}, NodeClasses: suite.Deploy.NodeClasses,
		InstanceTypes: cat.Types(), Zones: suite.LC.Options.Zones, Spot: pricing.Model{Catalog: cat, Seed: suite.LC.Options.PriceSeed}})
	if err != nil {
		t.Fatal(err)
	}
	return res.LowerBoundPricePerHour
}

// TestEmptyNodesAndBudgets: empty nodes go only after consolidateAfter;
// a budget of one node removes one per tick; a budget window that is not
// active blocks.
func TestEmptyNodesAndBudgets(t *testing.T) {
	c := harness.Ctx(t)
	smallPool(t, "empty", func(np *apis.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = dur("1m")
		sched, d := "0 0 1 1 *", metav1.Duration{Duration: time.Hour} // once a year, not now
		np.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "1"}, {Nodes: "0", Schedule: &sched, Duration: &d}}
	})
	h := suite.Harness(t, harness.Options{ValidationWait: validationWait})
	launch(t, h, harness.OnPool("empty", "emptyapp", 6, "1", "1Gi"))
	if n := len(live(t, "empty")); n != 6 {
		t.Fatalf("%d nodes for 6 one-CPU pods on c6g.large, want 6", n)
	}
	if err := harness.Scale(c, suite.LC, "default", "emptyapp", 0); err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(c, time.Minute, "pods gone", func() (bool, string, error) {
		n, err := harness.Count(c, suite.LC, "default", "emptyapp")
		return err == nil && n.Total == 0, n.String(), err
	}); err != nil {
		t.Fatal(err)
	}
	tick(t, h)
	h.Clock.Advance(30 * time.Second)
	tick(t, h)
	if n := len(live(t, "empty")); n != 6 {
		t.Fatalf("%d nodes 30 s after they emptied: consolidateAfter is 1m", n)
	}
	counts := []int{}
	for range 3 {
		h.Clock.Advance(31 * time.Second)
		tick(t, h)
		counts = append(counts, len(live(t, "empty")))
	}
	if counts[0] != 5 || counts[1] != 4 || counts[2] != 3 {
		t.Errorf("nodes after each tick %v: want one removed per tick (budget of 1)", counts)
	}
	if sum, _ := h.Metrics.Sum(metrics.ConsolidationActions, map[string]string{metrics.DimMethod: string(disruption.MethodEmptiness), metrics.DimReason: string(disruption.ReasonEmpty)}); sum != 3 {
		t.Errorf("metric %s{emptiness, Empty}: %v, want 3", metrics.ConsolidationActions, sum)
	}
	if sum, _ := h.Metrics.Sum(metrics.ConsolidationNodesRemoved, nil); sum != 3 {
		t.Errorf("metric %s: %v, want 3", metrics.ConsolidationNodesRemoved, sum)
	}
	if _, n := h.Metrics.Sum(metrics.ConsolidationCandidates, nil); n == 0 {
		t.Errorf("metric %s never emitted", metrics.ConsolidationCandidates)
	}
	// An active window of zero blocks everything.
	pool := currentPool(t, "empty")
	sched, d := "* * * * *", metav1.Duration{Duration: 2 * time.Minute}
	pool.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "0", Schedule: &sched, Duration: &d}}
	updatePool(t, pool)
	h.Clock.Advance(31 * time.Second)
	tick(t, h)
	if n := len(live(t, "empty")); n != 3 {
		t.Errorf("%d nodes under an active budget of 0, want 3", n)
	}
}

// TestDoNotDisruptAndPDBs: three c6g.xlarge nodes each left with one
// 1-CPU pod (a quarter of a node): any one's pod fits on another, so
// without protection each is a node consolidation would remove. The node
// of a do-not-disrupt pod and the node of a pod whose PDB allows nothing
// stay; the third, the control, goes (proving the other two would have).
// A do-not-disrupt pod that appears on the control during the validation
// wait cancels the action and the taint is removed; once the PDB is
// deleted its node goes too.
func TestDoNotDisruptAndPDBs(t *testing.T) {
	c := harness.Ctx(t)
	suite.Pool(t, "keep", func(np *apis.NodePool) {
		np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
			{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6g.xlarge"}},
			{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
		}
		np.Spec.Disruption.ConsolidateAfter = dur("30s")
		np.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "100%"}}
	})
	h := suite.Harness(t, harness.Options{ValidationWait: 10 * time.Second})
	// Three pods of 1 CPU fill a c6g.xlarge (3.92 CPU allocatable): each
	// Deployment gets a node of its own.
	dnd := harness.OnPool("keep", "keepdnd", 3, "1", "256Mi")
	dnd.Annotations = map[string]string{apis.AnnotationDoNotDisrupt: "true"}
	apps := []string{"keepdnd", "keeppdb", "keepctl"}
	for _, w := range []harness.Workload{dnd, harness.OnPool("keep", "keeppdb", 3, "1", "256Mi"), harness.OnPool("keep", "keepctl", 3, "1", "256Mi")} {
		launch(t, h, w)
	}
	home := map[string]string{} // app -> node
	for _, app := range apps {
		nodes, err := harness.NodesOf(c, suite.LC, "default", app)
		if err != nil || len(nodes) != 1 {
			t.Fatalf("%s runs on %d nodes (%v), want one of its own", app, len(nodes), err)
		}
		for n := range nodes {
			home[app] = n
		}
		if err := harness.Scale(c, suite.LC, "default", app, 1); err != nil {
			t.Fatal(err)
		}
	}
	if home["keepdnd"] == home["keeppdb"] || home["keeppdb"] == home["keepctl"] || home["keepdnd"] == home["keepctl"] {
		t.Fatalf("apps share nodes: %v", home)
	}
	for _, app := range apps {
		if err := harness.WaitRunning(c, suite.LC, "default", app, 1, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := harness.PDB(c, suite.LC, "default", "keeppdb", 0); err != nil {
		t.Fatal(err)
	}
	if recs := live(t, "keep"); len(recs) != 3 {
		t.Fatalf("%d nodes, want 3", len(recs))
	}
	control := home["keepctl"]

	// The control is the only candidate; while the tick waits to validate,
	// a do-not-disrupt pod appears on it.
	tick(t, h)
	h.Clock.Advance(31 * time.Second)
	done := make(chan error, 1)
	go func() { done <- h.Tick(c) }()
	var tainted string
	if err := harness.Poll(c, 2*time.Minute, "a candidate tainted", func() (bool, string, error) {
		nodes, err := suite.LC.Kube.CoreV1().Nodes().List(c, metav1.ListOptions{LabelSelector: apis.LabelNodePool + "=keep"})
		if err != nil {
			return false, "", err
		}
		for _, n := range nodes.Items {
			for _, tn := range n.Spec.Taints {
				if tn.Key == apis.TaintKeyDisrupted {
					tainted = n.Name
					return true, "", nil
				}
			}
		}
		return false, "", nil
	}); err != nil {
		t.Fatal(err)
	}
	if tainted != control {
		t.Fatalf("node %s tainted as a candidate; want only the control %s (%v)", tainted, control, home)
	}
	guard := harness.PodOf(harness.OnPool("keep", "keepguard", 1, "100m", "64Mi"), 0)
	guard.Annotations = map[string]string{apis.AnnotationDoNotDisrupt: "true"}
	guard.Spec.NodeName = tainted
	guard.Spec.Containers[0].Image = "public.ecr.aws/eks-distro/kubernetes/pause:3.7"
	if _, err := suite.LC.Kube.CoreV1().Pods("default").Create(c, guard, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n, err := suite.LC.Kube.CoreV1().Nodes().Get(c, tainted, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the candidate %s is gone: the action was not abandoned (%v)", tainted, err)
	}
	for _, tn := range n.Spec.Taints {
		if tn.Key == apis.TaintKeyDisrupted {
			t.Errorf("node %s keeps the disrupted taint after the action was abandoned", tainted)
		}
	}
	st, _ := harness.Store(suite.LC)
	acts, _ := st.Actions(c)
	abandoned := false
	for _, a := range acts {
		if a.Step == state.StepAbandoned && strings.Contains(a.Cause, "do-not-disrupt") && slices.Contains(a.Nodes, control) {
			abandoned = true
		}
	}
	if !abandoned {
		t.Error("no action on the control abandoned for the do-not-disrupt pod")
	}
	if _, n := h.Metrics.Sum(metrics.ConsolidationAbandoned, map[string]string{metrics.DimReason: "DoNotDisrupt"}); n == 0 {
		t.Errorf("metric %s with Reason=DoNotDisrupt never emitted", metrics.ConsolidationAbandoned)
	}
	for _, reason := range []string{"DisruptionPlanned", "DisruptionAbandoned"} {
		if !nodeEvent(t, control, reason) {
			t.Errorf("no %s event on the control node %s", reason, control)
		}
	}

	// The guard goes: the control is consolidated (its pod moves to a
	// protected node's room), the protected nodes stay.
	if err := suite.LC.Kube.CoreV1().Pods("default").Delete(c, guard.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	ticksUntil(t, h, 31*time.Second, 5, "the control node removed", func() (bool, string) {
		_, err := suite.LC.Kube.CoreV1().Nodes().Get(c, control, metav1.GetOptions{})
		return err != nil, fmt.Sprintf("%d nodes", len(live(t, "keep")))
	})
	if err := harness.WaitRunning(c, suite.LC, "default", "keepctl", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		h.Clock.Advance(31 * time.Second)
		tick(t, h)
	}
	for _, app := range []string{"keepdnd", "keeppdb"} {
		if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, home[app], metav1.GetOptions{}); err != nil {
			t.Errorf("%s's node %s is gone: it is protected (%v)", app, home[app], err)
		}
		pods, _ := harness.Pods(c, suite.LC, "default", app)
		if len(pods) != 1 || pods[0].Spec.NodeName != home[app] || pods[0].DeletionTimestamp != nil {
			t.Errorf("the pod of %s moved: it is protected", app)
		}
	}
	if sum, _ := h.Metrics.Sum(metrics.ConsolidationActions, map[string]string{metrics.DimReason: string(disruption.ReasonUnderutilized)}); sum < 1 {
		t.Errorf("metric %s with Reason=Underutilized: %v, want the control's action counted", metrics.ConsolidationActions, sum)
	}

	// Without its PDB the second node is one consolidation removes too.
	if err := suite.LC.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(c, "keeppdb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ticksUntil(t, h, 31*time.Second, 5, "keeppdb's node removed once its PDB is gone", func() (bool, string) {
		_, err := suite.LC.Kube.CoreV1().Nodes().Get(c, home["keeppdb"], metav1.GetOptions{})
		return err != nil, fmt.Sprintf("%d nodes", len(live(t, "keep")))
	})
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, home["keepdnd"], metav1.GetOptions{}); err != nil {
		t.Errorf("the do-not-disrupt pod's node %s is gone (%v)", home["keepdnd"], err)
	}
}

// nodeEvent reports whether a Kubernetes event with reason names node.
func nodeEvent(t *testing.T, node, reason string) bool {
	t.Helper()
	c := harness.Ctx(t)
	found := false
	_ = harness.Poll(c, 30*time.Second, reason+" on "+node, func() (bool, string, error) {
		evs, err := suite.LC.Kube.CoreV1().Events("").List(c, metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
		if err != nil {
			return false, "", err
		}
		for _, e := range evs.Items {
			if e.Reason == reason {
				found = true
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items)), nil
	})
	return found
}

// reasonOn reports whether an event with reason is on an object of kind
// (and name, unless empty), listed by reason as kubectl's field selector
// lists them.
func reasonOn(t *testing.T, reason, kind, name string) bool {
	t.Helper()
	c := harness.Ctx(t)
	found := false
	_ = harness.Poll(c, 30*time.Second, reason+" on "+kind+" "+name, func() (bool, string, error) {
		evs, err := suite.LC.Kube.CoreV1().Events("").List(c, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range evs.Items {
			o := e.InvolvedObject
			if o.Kind == kind && (name == "" || o.Name == name) {
				found = true
				return true, "", nil
			}
			seen = append(seen, o.Kind+"/"+o.Name)
		}
		return false, fmt.Sprintf("on %v", seen), nil
	})
	return found
}

func ptr[T any](v T) *T { return &v }

// agentTaint is a startup taint that the test's node agent (standing for a
// CNI or storage agent) removes once it is let: until then a node is not
// initialized, whatever its Ready condition.
const agentTaint = "nodewright.io/test-agent"

// agent removes agentTaint from the pool's nodes while open.
type agent struct{ open atomic.Bool }

func startAgent(t *testing.T, pool string) *agent {
	t.Helper()
	a := &agent{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(func() { cancel(); wg.Wait() })
	go func() {
		defer wg.Done()
		tk := time.NewTicker(200 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			if !a.open.Load() {
				continue
			}
			nodes, err := suite.LC.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: apis.LabelNodePool + "=" + pool})
			if err != nil {
				continue
			}
			for _, n := range nodes.Items {
				if !slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == agentTaint }) {
					continue
				}
				n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == agentTaint })
				_, _ = suite.LC.Kube.CoreV1().Nodes().Update(ctx, &n, metav1.UpdateOptions{}) // a conflict: the next pass
			}
		}
	}()
	return a
}

// readiness records when each Node was first seen Ready with agentTaint
// gone (initialized, as Nodewright judges it).
type readiness struct {
	mu sync.Mutex
	at map[string]time.Time
}

func watchReadiness(t *testing.T, pool string) *readiness {
	t.Helper()
	c := harness.Ctx(t)
	w, err := suite.LC.Kube.CoreV1().Nodes().Watch(c, metav1.ListOptions{LabelSelector: apis.LabelNodePool + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	r := &readiness{at: map[string]time.Time{}}
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == agentTaint }) {
				continue
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					r.mu.Lock()
					if _, seen := r.at[n.Name]; !seen {
						r.at[n.Name] = time.Now()
					}
					r.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(w.Stop)
	return r
}

func (r *readiness) of(node string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at[node]
}

// firstDeletion watches app's pods and returns a function that tells when the
// first of them began terminating (an eviction or a deletion).
func firstDeletion(t *testing.T, app string) func() time.Time {
	t.Helper()
	first, err := harness.FirstTermination(harness.Ctx(t), suite.LC, "default", app)
	if err != nil {
		t.Fatal(err)
	}
	return first
}

// TestReplacementReadyFirstAndResumed: a 2xlarge node left with one 1-CPU
// pod is replaced by a cheaper node. The tick's invocation ends while the
// replacement is launching (not initialized: the node agent holds its
// startup taint): the action stays at its step, nothing is evicted, and
// the next tick finishes it without a second launch. The replacement is
// Ready (and initialized) before the first eviction. A PDB that appears
// after validation blocks the drain until the pool's
// terminationGracePeriod, counted from the start of the drain (not from
// planning, 8 minutes of slow boot earlier), forces it. The action is a
// DisruptionPlanned event on the node and is counted in the metrics.
func TestReplacementReadyFirstAndResumed(t *testing.T) {
	c := harness.Ctx(t)
	const grace = 10 * time.Minute
	suite.Pool(t, "swap", func(np *apis.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, arm64,
			apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceSize, Operator: corev1.NodeSelectorOpIn, Values: []string{"2xlarge", "large", "medium"}},
			apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}})
		np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: agentTaint, Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: grace}
		np.Spec.Disruption.ConsolidateAfter = dur("30s")
		np.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "100%"}}
	})
	ag := startAgent(t, "swap")
	ag.open.Store(true)
	ready := watchReadiness(t, "swap")
	// A tick leaves a blocked drain to the next after 10 s.
	h := suite.Harness(t, harness.Options{ValidationWait: validationWait, ConsolidationMaxWait: 10 * time.Second})
	// Six 1-CPU pods: one 2xlarge is cheaper than six larges.
	launch(t, h, harness.OnPool("swap", "swapapp", 6, "1", "1Gi"))
	before := live(t, "swap")
	if len(before) != 1 {
		t.Fatalf("%d nodes for six 1-CPU pods, want one 2xlarge", len(before))
	}
	old := before[0]
	nodes, err := harness.NodesOf(c, suite.LC, "default", "swapapp")
	if err != nil || len(nodes) != 1 {
		t.Fatalf("swapapp on %d nodes (%v), want one", len(nodes), err)
	}
	oldNode := ""
	for n := range nodes {
		oldNode = n
	}
	if err := harness.Scale(c, suite.LC, "default", "swapapp", 1); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "swapapp", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The pods' scale-down deletions are over: what follows is consolidation's.
	if err := harness.Poll(c, time.Minute, "swapapp down to one pod", func() (bool, string, error) {
		n, err := harness.Count(c, suite.LC, "default", "swapapp")
		return err == nil && n.Total == 1, n.String(), err
	}); err != nil {
		t.Fatal(err)
	}
	evicted := firstDeletion(t, "swapapp")
	tick(t, h)
	h.Clock.Advance(31 * time.Second)

	// The agent holds the replacement's startup taint; the invocation ends
	// once the replacement is launching.
	ag.open.Store(false)
	tctx, cancel := context.WithCancel(c)
	done := make(chan error, 1)
	go func() { done <- h.Tick(tctx) }()
	st, _ := harness.Store(suite.LC)
	var a *state.Action
	if err := harness.Poll(c, 2*time.Minute, "the replacement launching", func() (bool, string, error) {
		acts, err := st.Actions(c)
		if err != nil {
			return false, "", err
		}
		for _, x := range acts {
			if x.Kind == state.KindConsolidation && slices.Contains(x.NodeClaims, old.Name) {
				a = x
				return x.Step == state.StepReplacing && len(x.Replacements) == 1, x.Step, nil
			}
		}
		return false, "no action on " + old.Name, nil
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Log("the interrupted tick returned without an error")
	}
	a, err = st.GetAction(c, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Step != state.StepReplacing || len(a.Replacements) != 1 {
		t.Fatalf("after the interrupted tick: step %s, replacements %v; want replacing with the one replacement", a.Step, a.Replacements)
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, oldNode, metav1.GetOptions{}); err != nil || !evicted().IsZero() {
		t.Fatalf("after the interrupted tick: node %s %v, first eviction at %v; want the node and its pod untouched", oldNode, err, evicted())
	}
	repl := a.Replacements[0]

	// The replacement boots slowly (8 minutes on the functions' clock),
	// and meanwhile a PDB that allows nothing appears: the drain will be
	// blocked until terminationGracePeriod forces it, counted from the
	// start of the drain, not from planning.
	h.Clock.Advance(8 * time.Minute)
	if err := harness.PDB(c, suite.LC, "default", "swapapp", 0); err != nil {
		t.Fatal(err)
	}
	drainFrom := h.Clock.Now()
	ag.open.Store(true)
	go func() { done <- h.Tick(c) }()
	var deadline time.Time
	if err := harness.Poll(c, 2*time.Minute, "the drain begun and blocked", func() (bool, string, error) {
		x, err := st.GetAction(c, a.ID)
		if err != nil {
			return false, "", err
		}
		a = x
		rec, err := st.GetNodeClaim(c, old.Name)
		if err != nil {
			return false, "", err
		}
		if rec.Disruption != nil {
			deadline = rec.Disruption.Deadline
		}
		return x.Step == state.StepDraining && !deadline.IsZero(), x.Step, nil
	}); err != nil {
		t.Fatal(err)
	}
	if deadline.Before(drainFrom.Add(grace)) || deadline.After(h.Clock.Now().Add(grace)) {
		t.Errorf("drain deadline %v: want terminationGracePeriod (%s) after the drain began (between %v and %v); the action was planned at %v",
			deadline, grace, drainFrom.Add(grace), h.Clock.Now().Add(grace), a.CreatedAt)
	}
	if pods, _ := harness.Pods(c, suite.LC, "default", "swapapp"); len(pods) != 1 || pods[0].DeletionTimestamp != nil || !evicted().IsZero() {
		t.Errorf("the PDB allows nothing and the grace period has not passed: want the pod in place")
	}
	if err := <-done; err != nil { // the tick leaves the blocked drain to the next
		t.Fatal(err)
	}
	if x, _ := st.GetAction(c, a.ID); x == nil || x.Step != state.StepDraining {
		t.Fatalf("after the tick: %+v; want the action still draining", x)
	}
	// Past the grace period the next tick forces the drain: the pod is
	// deleted, the node terminated.
	h.Clock.Advance(grace)
	if err := harness.Poll(c, 3*time.Minute, "the action done", func() (bool, string, error) {
		x, err := st.GetAction(c, a.ID)
		if err != nil {
			return false, "", err
		}
		a = x
		if x.Step != state.StepDone {
			tick(t, h)
		}
		return x.Step == state.StepDone, x.Step + " " + x.Cause, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(a.Stranded) != 1 || a.Evicted != 0 {
		t.Errorf("action: %d evicted, forced %v; want the one pod deleted past the grace period", a.Evicted, a.Stranded)
	}
	recs, _ := harness.PoolRecords(c, st, "swap")
	launched := 0
	var replRec *state.NodeClaim
	for _, r := range recs {
		if strings.Contains(r.Reason, a.ID) {
			launched++
		}
		if r.Name == repl {
			replRec = r
		}
	}
	if launched != 1 || replRec == nil || len(recs) != 1 {
		t.Fatalf("records %d, %d launched for the action: want only the one replacement %s", len(recs), launched, repl)
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, oldNode, metav1.GetOptions{}); err == nil {
		t.Errorf("the replaced node %s is still there", oldNode)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "swapapp", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	readyAt, first := ready.of(replRec.NodeName), evicted()
	if readyAt.IsZero() || first.IsZero() || !readyAt.Before(first) {
		t.Errorf("replacement %s Ready and initialized at %v, first eviction at %v: want the replacement first", replRec.NodeName, readyAt, first)
	}
	if !nodeEvent(t, oldNode, "DisruptionPlanned") {
		t.Errorf("no DisruptionPlanned event on %s", oldNode)
	}
	// Karpenter's reasons, on Karpenter's objects, found as its users find
	// them (kubectl get events --field-selector reason=...).
	for _, w := range []struct{ reason, kind, name string }{
		{"DisruptionLaunching", "NodeClaim", repl}, {"DisruptionWaitingReadiness", "NodeClaim", repl},
		{"DisruptionTerminating", "Node", oldNode}, {"DisruptionTerminating", "NodeClaim", old.Name},
		{"FailedDraining", "Node", oldNode}, {"TerminationGracePeriodExpiring", "Node", oldNode}, {"Disrupted", "Pod", ""},
	} {
		if !reasonOn(t, w.reason, w.kind, w.name) {
			t.Errorf("kubectl get events --field-selector reason=%s: none on %s %s", w.reason, w.kind, w.name)
		}
	}
	if sum, _ := h.Metrics.Sum(metrics.ConsolidationActions, map[string]string{metrics.DimMethod: string(disruption.MethodSingleNode), metrics.DimReason: string(disruption.ReasonUnderutilized)}); sum != 1 {
		t.Errorf("metric %s{single-node, Underutilized}: %v, want 1", metrics.ConsolidationActions, sum)
	}
	if sum, _ := h.Metrics.Sum(metrics.ConsolidationNodesRemoved, nil); sum != 1 {
		t.Errorf("metric %s: %v, want 1", metrics.ConsolidationNodesRemoved, sum)
	}
	if sum, _ := h.Metrics.Sum(metrics.ConsolidationSavings, nil); sum <= 0 || sum > old.PricePerHour {
		t.Errorf("metric %s: %v, want the saving (0, %v]", metrics.ConsolidationSavings, sum, old.PricePerHour)
	}
	if _, n := h.Metrics.Sum(metrics.ConsolidationCandidates, nil); n == 0 {
		t.Errorf("metric %s never emitted", metrics.ConsolidationCandidates)
	}
	if sum, _ := h.Metrics.Sum(metrics.PodsEvicted, map[string]string{metrics.DimReason: state.KindConsolidation}); sum != 1 {
		t.Errorf("metric %s{consolidation}: %v, want the one pod", metrics.PodsEvicted, sum)
	}
	t.Logf("%s ($%.4f/h) replaced by %s ($%.4f/h): replacement initialized %s before the first eviction",
		old.InstanceType, old.PricePerHour, replRec.InstanceType, replRec.PricePerHour, first.Sub(readyAt).Round(10*time.Millisecond))
}

// TestPoliciesDriftExpiryAndMinSaving: WhenEmpty pools never replace busy
// nodes; a minimum saving the replacement would not reach blocks it, while
// the same pool without it (the control) has its node replaced; a new AMI
// behind the EC2NodeClass's alias makes nodes drift and they are replaced
// one budget at a time; a node past expireAfter is replaced.
func TestPoliciesDriftExpiryAndMinSaving(t *testing.T) {
	c := harness.Ctx(t)
	// A big node holding one small pod, on three pools (on-demand, so that
	// the spot-to-spot rule plays no part: a large is a quarter of the
	// price of the 2xlarge).
	big := func(name string, mutate func(*apis.NodePool)) {
		suite.Pool(t, name, func(np *apis.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceSize, Operator: corev1.NodeSelectorOpIn, Values: []string{"2xlarge", "large", "medium"}}, arm64,
				apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}})
			np.Spec.Disruption.ConsolidateAfter = dur("30s")
			np.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "1"}}
			mutate(np)
		})
	}
	big("whenempty", func(np *apis.NodePool) { np.Spec.Disruption.ConsolidationPolicy = apis.ConsolidationPolicyWhenEmpty })
	big("minsave", func(np *apis.NodePool) {
		np.Annotations = map[string]string{disruption.AnnotationMinSavingsPercent: "99"}
	})
	big("minsavectl", func(np *apis.NodePool) {})
	h := suite.Harness(t, harness.Options{ValidationWait: validationWait})
	pools := []string{"whenempty", "minsave", "minsavectl"}
	for _, pool := range pools {
		w := harness.OnPool(pool, pool+"app", 6, "1", "1Gi")
		launch(t, h, w)
		if err := harness.Scale(c, suite.LC, "default", pool+"app", 1); err != nil {
			t.Fatal(err)
		}
	}
	busy := map[string]string{} // pool -> the node of its one pod
	for _, pool := range pools {
		if err := harness.WaitRunning(c, suite.LC, "default", pool+"app", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		nodes, err := harness.NodesOf(c, suite.LC, "default", pool+"app")
		if err != nil || len(nodes) != 1 {
			t.Fatalf("%sapp on %d nodes (%v)", pool, len(nodes), err)
		}
		for n := range nodes {
			busy[pool] = n
		}
	}
	replaced := func(pool string) []string {
		var out []string
		for _, r := range live(t, pool) {
			if strings.Contains(r.Reason, "consolidation") {
				out = append(out, r.Name)
			}
		}
		return out
	}
	tick(t, h)
	// The control's busy node is replaced by a cheaper one: the same
	// replacement the minimum saving blocks on minsave.
	ticksUntil(t, h, 31*time.Second, 5, "the control pool's node replaced", func() (bool, string) {
		return len(replaced("minsavectl")) > 0, fmt.Sprintf("%d nodes in minsavectl", len(live(t, "minsavectl")))
	})
	for range 2 { // ticks that consider the other pools' nodes again
		h.Clock.Advance(31 * time.Second)
		tick(t, h)
	}
	if r := replaced("minsave"); len(r) > 0 {
		t.Errorf("pool minsave: replacements %v launched below the minimum saving", r)
	}
	if r := replaced("whenempty"); len(r) > 0 {
		t.Errorf("pool whenempty: replacements %v launched for a busy node", r)
	}
	for _, pool := range []string{"whenempty", "minsave"} {
		if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, busy[pool], metav1.GetOptions{}); err != nil {
			t.Errorf("pool %s: its busy node %s is gone (%v)", pool, busy[pool], err)
		}
		pods, _ := harness.Pods(c, suite.LC, "default", pool+"app")
		if len(pods) != 1 || pods[0].Spec.NodeName != busy[pool] {
			t.Errorf("pool %s: its pod moved off %s", pool, busy[pool])
		}
	}
	if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, busy["minsavectl"], metav1.GetOptions{}); err == nil {
		t.Errorf("pool minsavectl: the replaced node %s is still there", busy["minsavectl"])
	}

	// Drift: the alias now resolves to another image (for amd64: this
	// pool's nodes only; every other pool here runs on arm64).
	suite.Pool(t, "drift", func(np *apis.NodePool) {
		np.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "1"}}
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6i.large"}})
	})
	launch(t, h, harness.OnPool("drift", "driftapp", 2, "1", "1Gi"))
	old := live(t, "drift")
	if len(old) != 2 {
		t.Fatalf("%d drift nodes, want 2", len(old))
	}
	for _, r := range old {
		// The launch records the instance's placement (subnet and security
		// group drift compare it with the class's selection).
		if r.SubnetID == "" || len(r.SecurityGroups) == 0 {
			t.Errorf("record %s: subnet %q, security groups %v; want the instance's", r.Name, r.SubnetID, r.SecurityGroups)
		}
	}
	restore := newAMI(t, old[0].ImageID)
	defer restore()
	var counts []int
	ticksUntil(t, h, 10*time.Second, 8, "both drifted nodes replaced", func() (bool, string) {
		recs := live(t, "drift")
		stale := 0
		for _, r := range recs {
			if r.ImageID == old[0].ImageID {
				stale++
			}
		}
		counts = append(counts, stale)
		return stale == 0, fmt.Sprintf("%d of %d nodes on the old image", stale, len(recs))
	})
	for i := 1; i < len(counts); i++ {
		if counts[i-1]-counts[i] > 1 {
			t.Errorf("drifted nodes on the old image per tick %v: want at most one replaced per tick (budget 1)", counts)
		}
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "driftapp", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Each replacement says how its node drifted: its AMI, not its subnet
	// or security groups, which the class still selects.
	st, err := harness.Store(suite.LC)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := st.Actions(c)
	if err != nil {
		t.Fatal(err)
	}
	drifts := map[string]string{}
	for _, a := range acts {
		for _, r := range old {
			if a.Method == "drift" && slices.Contains(a.NodeClaims, r.Name) {
				drifts[r.Name] = a.Drift
			}
		}
	}
	for _, r := range old {
		if drifts[r.Name] != "AMIDrift" {
			t.Errorf("node %s replaced for drift %q, want AMIDrift (all: %v)", r.Name, drifts[r.Name], drifts)
		}
	}

	// Expiry: past expireAfter the node is replaced.
	suite.Pool(t, "expire", func(np *apis.NodePool) {
		np.Spec.Template.Spec.ExpireAfter = dur("10m")
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6g.large"}})
	})
	launch(t, h, harness.OnPool("expire", "expireapp", 1, "1", "1Gi"))
	first := live(t, "expire")
	ticksUntil(t, h, 11*time.Minute, 3, "the expired node replaced", func() (bool, string) {
		recs := live(t, "expire")
		return len(recs) == 1 && recs[0].Name != first[0].Name, fmt.Sprintf("%d nodes", len(recs))
	})
	if err := harness.WaitRunning(c, suite.LC, "default", "expireapp", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// newAMI points the AL2023 alias's public parameters for the image's
// architecture at another image, as a new EKS AMI release does; the
// returned function restores them.
func newAMI(t *testing.T, current string) func() {
	t.Helper()
	c := harness.Ctx(t)
	ec2c := ec2.NewFromConfig(suite.LC.AWSConfig())
	out, err := ec2c.DescribeImages(c, &ec2.DescribeImagesInput{ImageIds: []string{current}})
	if err != nil || len(out.Images) == 0 {
		t.Fatalf("image %s: %v", current, err)
	}
	arch := out.Images[0].Architecture
	all, err := ec2c.DescribeImages(c, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{string(arch)}}}})
	if err != nil {
		t.Fatal(err)
	}
	next := ""
	for _, im := range all.Images {
		if id := aws.ToString(im.ImageId); id != current {
			next = id
			break
		}
	}
	if next == "" {
		t.Fatal("no other image of the architecture")
	}
	params := map[string]string{}
	for name, v := range suite.LC.Seeded.Parameters {
		if v == current {
			params[name] = v
			suite.LC.AWS.SetPublicParameter(name, next)
		}
	}
	if len(params) == 0 {
		t.Fatalf("no public parameter points at %s", current)
	}
	return func() {
		for name, v := range params {
			suite.LC.AWS.SetPublicParameter(name, v)
		}
	}
}

func currentPool(t *testing.T, name string) *apis.NodePool {
	t.Helper()
	np, err := harness.GetPool(harness.Ctx(t), suite.LC, name)
	if err != nil {
		t.Fatal(err)
	}
	return np
}

func updatePool(t *testing.T, np *apis.NodePool) {
	t.Helper()
	if err := harness.UpdatePool(harness.Ctx(t), suite.LC, np); err != nil {
		t.Fatal(err)
	}
}
