// Package consolidation_test proves the consolidation function end to end
// on the local cloud: its timer's event drives the handler, which removes
// and replaces Nodewright's nodes within each NodePool's policy, budgets,
// consolidateAfter, expireAfter and drift, never past a do-not-disrupt
// annotation or a PodDisruptionBudget. The tests run one at a time: each
// moves the functions' clock on, and consolidation acts on the whole
// cluster.
package consolidation_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/consolidation"
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

// TestDoNotDisruptAndPDBs: a pod annotated do-not-disrupt keeps its node;
// a PDB with zero allowed disruptions keeps its node; a do-not-disrupt pod
// that appears during the validation wait cancels the action and the taint
// is removed.
func TestDoNotDisruptAndPDBs(t *testing.T) {
	c := harness.Ctx(t)
	smallPool(t, "keep", nil)
	h := suite.Harness(t, harness.Options{ValidationWait: 10 * time.Second})
	dnd := harness.OnPool("keep", "keepdnd", 1, "1", "256Mi")
	dnd.Annotations = map[string]string{apis.AnnotationDoNotDisrupt: "true"}
	launch(t, h, dnd)
	pdb := harness.OnPool("keep", "keeppdb", 1, "1", "256Mi")
	launch(t, h, pdb)
	if err := harness.PDB(c, suite.LC, "default", "keeppdb", 0); err != nil {
		t.Fatal(err)
	}
	launch(t, h, harness.OnPool("keep", "keeplate", 2, "1", "256Mi"))
	if err := harness.Scale(c, suite.LC, "default", "keeplate", 1); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, suite.LC, "default", "keeplate", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if recs := live(t, "keep"); len(recs) != 4 {
		t.Fatalf("%d nodes, want 4 (one 1-CPU pod per c6g.large)", len(recs))
	}
	// The empty node is a candidate; while the tick waits to validate, a
	// do-not-disrupt pod appears on it.
	tick(t, h)
	h.Clock.Advance(31 * time.Second)
	done := make(chan error, 1)
	go func() { done <- h.Tick(c) }()
	var tainted string
	if err := harness.Poll(c, time.Minute, "a candidate tainted", func() (bool, string, error) {
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
		if a.Step == state.StepAbandoned && strings.Contains(a.Cause, "do-not-disrupt") {
			abandoned = true
		}
	}
	if !abandoned {
		t.Error("no action abandoned for the do-not-disrupt pod")
	}
	// More ticks: the nodes of the do-not-disrupt pods and of the pod
	// whose PDB allows nothing stay (the last app's pod may move onto
	// the guarded node's free room, and its node go: that is allowed).
	protected := map[string]string{tainted: "the guard's node"}
	for _, app := range []string{"keepdnd", "keeppdb"} {
		pods, err := harness.Pods(c, suite.LC, "default", app)
		if err != nil || len(pods) != 1 {
			t.Fatalf("pods of %s: %d, %v", app, len(pods), err)
		}
		protected[pods[0].Spec.NodeName] = app + "'s node"
	}
	for range 3 {
		h.Clock.Advance(31 * time.Second)
		tick(t, h)
	}
	for node, what := range protected {
		if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, node, metav1.GetOptions{}); err != nil {
			t.Errorf("%s %s is gone after three more ticks: %v", what, node, err)
		}
	}
	for _, app := range []string{"keepdnd", "keeppdb"} {
		pods, _ := harness.Pods(c, suite.LC, "default", app)
		if len(pods) != 1 || protected[pods[0].Spec.NodeName] == "" {
			t.Errorf("the pod of %s moved: it is protected", app)
		}
	}
}

// TestPoliciesDriftExpiryAndMinSaving: WhenEmpty pools never replace busy
// nodes; a minimum saving the replacement would not reach blocks it; a new
// AMI behind the EC2NodeClass's alias makes nodes drift and they are
// replaced one budget at a time; a node past expireAfter is replaced.
func TestPoliciesDriftExpiryAndMinSaving(t *testing.T) {
	c := harness.Ctx(t)
	// A big node holding one small pod, on three pools.
	big := func(name string, mutate func(*apis.NodePool)) {
		suite.Pool(t, name, func(np *apis.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceSize, Operator: corev1.NodeSelectorOpIn, Values: []string{"2xlarge", "large", "medium"}}, arm64)
			np.Spec.Disruption.ConsolidateAfter = dur("30s")
			np.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "1"}}
			mutate(np)
		})
	}
	big("whenempty", func(np *apis.NodePool) { np.Spec.Disruption.ConsolidationPolicy = apis.ConsolidationPolicyWhenEmpty })
	big("minsave", func(np *apis.NodePool) {
		np.Annotations = map[string]string{consolidation.AnnotationMinSavingsPercent: "99"}
	})
	h := suite.Harness(t, harness.Options{ValidationWait: validationWait})
	for _, pool := range []string{"whenempty", "minsave"} {
		w := harness.OnPool(pool, pool+"app", 6, "1", "1Gi")
		launch(t, h, w)
		if err := harness.Scale(c, suite.LC, "default", pool+"app", 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, pool := range []string{"whenempty", "minsave"} {
		if err := harness.WaitRunning(c, suite.LC, "default", pool+"app", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]int{"whenempty": len(live(t, "whenempty")), "minsave": len(live(t, "minsave"))}
	tick(t, h)
	for range 3 {
		h.Clock.Advance(31 * time.Second)
		tick(t, h)
	}
	for pool, n := range before {
		recs := live(t, pool)
		busy := 0
		for _, r := range recs {
			if r.PodsHash != "" {
				busy++
			}
		}
		if len(recs) == 0 || (pool == "minsave" && len(recs) < 1) {
			t.Errorf("pool %s: %d nodes left of %d", pool, len(recs), n)
		}
		for _, r := range recs {
			if strings.Contains(r.Reason, "consolidation") {
				t.Errorf("pool %s: a replacement %s was launched (%s)", pool, r.Name, r.Reason)
			}
		}
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
