package provision_test

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/requirements"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud/nodebridge"
)

// exampleInflate is the users' example inflate Deployment, as the file has it.
func exampleInflate(t *testing.T) *appsv1.Deployment {
	t.Helper()
	path, err := refdata.Example("inflate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := decodeDeployment(b)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// hintWhenUnschedulable waits until kube-scheduler has marked the pod
// Unschedulable, then hints the function as the webhook would.
func hintWhenUnschedulable(t *testing.T, h *harness.Harness, name string) {
	t.Helper()
	c := ctx(t)
	if err := harness.Poll(c, 2*time.Minute, "pod "+name+" unschedulable", func() (bool, string, error) {
		p, err := lc.Kube.CoreV1().Pods("default").Get(c, name, metav1.GetOptions{})
		return err == nil && podstate.Provisionable(p), "", err
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.Hint(c, "default", name); err != nil {
		t.Fatal(err)
	}
}

// nodeOnceRunning waits until the pod runs and returns its Node.
func nodeOnceRunning(t *testing.T, name string, within time.Duration) *corev1.Node {
	t.Helper()
	c := ctx(t)
	var node *corev1.Node
	if err := harness.Poll(c, within, "pod "+name+" running", func() (bool, string, error) {
		p, err := lc.Kube.CoreV1().Pods("default").Get(c, name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("err %v", err), nil
		}
		node, err = lc.Kube.CoreV1().Nodes().Get(c, p.Spec.NodeName, metav1.GetOptions{})
		return err == nil, "", err
	}); err != nil {
		t.Fatal(err)
	}
	return node
}

// createInflate creates the example inflate Deployment, unchanged but for
// its replica count.
func createInflate(t *testing.T, replicas int) {
	t.Helper()
	obj := exampleInflate(t)
	n := int32(replicas)
	obj.Spec.Replicas = &n
	if _, err := lc.Kube.AppsV1().Deployments("default").Create(ctx(t), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nodesOf returns the Nodes of the pods of app, by name.
func nodesOf(t *testing.T, app, ns string) map[string]*corev1.Node {
	t.Helper()
	out, err := harness.NodesOf(ctx(t), lc, ns, app)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var instanceOf = harness.InstanceOf

// TestSeedScenario: the users' production NodePool and EC2NodeClass,
// unchanged; inflate scaled 0 -> 8 -> 40, driven by the Lambda handler with
// a webhook hint, an audit-log batch and the schedule's sweep. Every pod
// runs on a node the function launched, of a type the pool allows, on spot,
// for a price within 20% of the plan's lower bound.
func TestSeedScenario(t *testing.T) {
	h := newHarness(t, harness.Options{})
	c := ctx(t)
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	createInflate(t, 0)
	if err := harness.Scale(c, lc, "default", "inflate", 8); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "inflate", 8, time.Minute); err != nil {
		t.Fatal(err)
	}
	pods, _ := harness.Pods(c, lc, "default", "inflate")
	if err := h.Hint(c, "default", pods[0].Name); err != nil {
		t.Fatalf("webhook hint: %v", err)
	}
	if err := harness.WaitRunning(c, lc, "default", "inflate", 8, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := harness.Scale(c, lc, "default", "inflate", 40); err != nil {
		t.Fatal(err)
	}
	if _, err := harness.WaitSettled(c, lc, "default", "inflate", 40, time.Minute); err != nil {
		t.Fatal(err)
	}
	pods, _ = harness.Pods(c, lc, "default", "inflate")
	var names []string
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			names = append(names, p.Name)
		}
	}
	if err := h.AuditLog(c, "default", names...); err != nil {
		t.Fatalf("audit log: %v", err)
	}
	if err := harness.WaitRunning(c, lc, "default", "inflate", 40, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	// The sweep finds nothing to do and launches nothing more.
	before, _ := harness.PoolRecords(c, st, "default")
	if err := h.Sweep(c); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	after, _ := harness.PoolRecords(c, st, "default")
	if len(after) != len(before) {
		t.Errorf("the sweep launched %d more NodeClaims with nothing pending", len(after)-len(before))
	}

	pool := deploy.NodePools[0]
	reqs, err := requirements.FromNodePool(pool)
	if err != nil {
		t.Fatal(err)
	}
	byInstance := map[string]*state.NodeClaim{}
	price := 0.0
	for _, r := range after {
		byInstance[r.InstanceID] = r
		price += r.PricePerHour
	}
	cat := catalog.Default()
	for name, n := range nodesOf(t, "inflate", "default") {
		r := byInstance[instanceOf(n)]
		if r == nil {
			t.Errorf("node %s (instance %s) runs inflate pods but the function did not launch it", name, instanceOf(n))
			continue
		}
		if _, ok := cat.Get(r.InstanceType); !ok || !reqs.Matches(n.Labels) {
			t.Errorf("nodeclaim %s: type %s (known %v) on a node whose labels the pool's requirements do not match", r.Name, r.InstanceType, ok)
		}
		if r.CapacityType != apis.CapacityTypeSpot || n.Labels[apis.LabelCapacityType] != apis.CapacityTypeSpot {
			t.Errorf("nodeclaim %s: capacity type %s (label %q), want spot", r.Name, r.CapacityType, n.Labels[apis.LabelCapacityType])
		}
		if r.Phase != state.Initialized || !slices.Contains(n.Finalizers, apis.FinalizerTermination) || n.Labels[apis.LabelInitialized] != "true" {
			t.Errorf("nodeclaim %s: phase %s, node finalizers %v, initialized label %q", r.Name, r.Phase, n.Finalizers, n.Labels[apis.LabelInitialized])
		}
	}
	bound := lowerBound(t, 40, pool)
	t.Logf("40 inflate pods on %d nodes: $%.4f/h; lower bound for 40 pods $%.4f/h (ratio %.3f)", len(after), price, bound, price/bound)
	if price > 1.2*bound {
		t.Errorf("price $%.4f/h is more than 20%% over the lower bound $%.4f/h", price, bound)
	}
	checkLaunchEvents(t, "default", "inflate", after)
	for _, m := range []string{"PendingPods", "SolveDurationMillis", "NodeClaimsLaunched", "RegistrationSeconds", "Nodes", "ClusterPricePerHour", "PodsDeferred"} {
		if len(h.Metrics.Values(m)) == 0 {
			t.Errorf("metric %s was never emitted", m)
		}
	}
	ds, err := st.Decisions(c, time.Now().Add(-10*time.Minute), 0)
	if err != nil || len(ds) == 0 || !strings.Contains(ds[len(ds)-1].Summary, "launched") {
		t.Errorf("decisions recorded: %d, %v", len(ds), err)
	}
	// What `nodewright explain` reads: each pod given a new NodeClaim
	// finds it, launched and with its options priced.
	explained := 0
	for _, d := range ds {
		for pod, what := range d.Pods {
			if !strings.HasPrefix(what, "nodeclaim ") || strings.Contains(what, "failed to launch") {
				continue
			}
			nc, ok := d.NodeClaimOf(pod)
			if !ok {
				t.Errorf("pod %s: %q names no NodeClaim of the decision", pod, what)
				continue
			}
			explained++
			if nc.InstanceType == "" || nc.PricePerHour <= 0 || len(nc.Options) == 0 || nc.Options[0].PricePerHour <= 0 || nc.OptionsTotal < len(nc.Options) {
				t.Errorf("pod %s: decided NodeClaim %+v", pod, nc)
			}
		}
	}
	if explained < 30 {
		t.Errorf("%d pods have a decided NodeClaim, want most of the 40", explained)
	}
}

// nominatedMessage is the event a pod gets when a NodeClaim is launched
// for it: "Nominated to NodeClaim <name> (<type>, <capacity type>, <zone>)".
var nominatedMessage = regexp.MustCompile(`^Nominated to NodeClaim (\S+) \((\S+), (spot|on-demand), (\S+)\)$`)

// checkLaunchEvents checks the Kubernetes events of launches: app's pods
// have "Nominated" events naming one of recs with its type, capacity type
// and zone, and each of recs has a "Launched" event naming its instance.
func checkLaunchEvents(t *testing.T, ns, app string, recs []*state.NodeClaim) {
	t.Helper()
	c := ctx(t)
	byName := map[string]*state.NodeClaim{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	ev, err := lc.Kube.CoreV1().Events(ns).List(c, metav1.ListOptions{FieldSelector: "reason=Nominated,involvedObject.kind=Pod"})
	if err != nil {
		t.Fatal(err)
	}
	nominated := map[string]bool{}
	for _, e := range ev.Items {
		if !strings.HasPrefix(e.InvolvedObject.Name, app+"-") {
			continue
		}
		m := nominatedMessage.FindStringSubmatch(e.Message)
		if m == nil {
			t.Errorf("pod %s: Nominated event %q", e.InvolvedObject.Name, e.Message)
			continue
		}
		r := byName[m[1]]
		if r == nil || r.InstanceType != m[2] || r.CapacityType != m[3] || r.Zone != m[4] {
			t.Errorf("pod %s: %q does not match the record %+v", e.InvolvedObject.Name, e.Message, r)
			continue
		}
		nominated[e.InvolvedObject.Name] = true
	}
	if len(nominated) == 0 {
		t.Errorf("no %s pod has a Nominated event (%d Nominated events)", app, len(ev.Items))
	}
	// A NodeClaim is no object of the cluster: its events are filed under
	// its name, in the default namespace, as for any cluster-scoped object.
	lev, err := lc.Kube.CoreV1().Events(metav1.NamespaceDefault).List(c, metav1.ListOptions{FieldSelector: "reason=Launched,involvedObject.kind=NodeClaim"})
	if err != nil {
		t.Fatal(err)
	}
	launched := map[string]string{}
	for _, e := range lev.Items {
		launched[e.InvolvedObject.Name] = e.Message
	}
	for _, r := range recs {
		if msg := launched[r.Name]; !strings.Contains(msg, "Launched NodeClaim "+r.Name+" ("+r.InstanceType+", "+r.CapacityType+", "+r.Zone) ||
			!strings.Contains(msg, r.InstanceID) {
			t.Errorf("NodeClaim %s (%s): Launched event %q", r.Name, r.InstanceID, msg)
		}
	}
}

// lowerBound is the plan's lower bound for n inflate pods on an empty
// cluster, priced as the local cloud prices spot.
func lowerBound(t *testing.T, n int, pool *apis.NodePool) float64 {
	t.Helper()
	path, _ := refdata.Example("inflate.yaml")
	b, _ := os.ReadFile(path)
	d, err := decodeDeployment(b)
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range n {
		p := &corev1.Pod{ObjectMeta: d.Spec.Template.ObjectMeta, Spec: d.Spec.Template.Spec}
		p.Name, p.Namespace = fmt.Sprintf("inflate-%d", i), "default"
		pods = append(pods, p)
	}
	cat := catalog.Default()
	res, err := scheduling.Solve(scheduling.Input{
		Pods: pods, NodePools: []*apis.NodePool{pool}, NodeClasses: deploy.NodeClasses, InstanceTypes: cat.Types(),
		Zones: lc.Options.Zones, Spot: pricing.Model{Catalog: cat, Seed: lc.Options.PriceSeed},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.LowerBoundPricePerHour
}

// TestGarbageTriggerLaunchesNothing: a payload that is no trigger is a
// clear error and reaches no cluster; a hint for another cluster is
// ignored.
func TestGarbageTriggerLaunchesNothing(t *testing.T) {
	h := newHarness(t, harness.Options{})
	for _, raw := range []string{`{"hello":1}`, `[]`, `{"awslogs":{"data":"!!!"}}`} {
		if err := h.Provision.Handle(ctx(t), []byte(raw)); err == nil {
			t.Errorf("payload %s: no error", raw)
		}
	}
	if _, err := h.Reconciler(ctx(t), "provision"); err != nil {
		t.Fatal(err)
	}
}

// testPool applies a pool of the test's own (see harness.TestPool).
func testPool(t *testing.T, name string, mutate func(*apis.NodePool)) *apis.NodePool {
	t.Helper()
	np, err := harness.TestPool(ctx(t), lc, deploy.NodePools[0], name, mutate)
	if err != nil {
		t.Fatal(err)
	}
	return np
}

var onPool = harness.OnPool

// TestCrashAfterCreateFleetIsAdopted: the process dies after CreateFleet
// answered and before the records were updated. The next invocation
// re-drives the same fleet (same ClientToken), adopts the instances EC2
// launched, and nothing leaks or launches twice.
func TestCrashAfterCreateFleetIsAdopted(t *testing.T) {
	c := ctx(t)
	testPool(t, "crash", nil)
	h := newHarness(t, harness.Options{})
	r, err := h.Reconciler(c, "provision")
	if err != nil {
		t.Fatal(err)
	}
	crashed := false
	r.AfterCreateFleet = func(token string) error {
		if strings.HasPrefix(token, "crash-") && !crashed {
			crashed = true
			return errors.New("injected crash")
		}
		return nil
	}
	if err := harness.Deploy(c, lc, onPool("crash", "crashapp", 3, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "crashapp", 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Sweep(c); err == nil || !strings.Contains(err.Error(), "injected crash") {
		t.Fatalf("first invocation: %v, want the injected crash", err)
	}
	st, _ := harness.Store(lc)
	recs, _ := harness.PoolRecords(c, st, "crash")
	if len(recs) == 0 || recs[0].Phase != state.Launching || recs[0].InstanceID != "" {
		t.Fatalf("after the crash: %+v, want records still launching with no instance", recs)
	}
	ec2Before := poolInstances(t, h, "crash")
	if len(ec2Before) == 0 {
		t.Fatal("the crashed fleet launched no instance")
	}
	time.Sleep(0) // the re-drive waits RedriveAfter (2 s) on the records' age
	if err := harness.Poll(c, time.Minute, "records adopted", func() (bool, string, error) {
		if err := h.Sweep(c); err != nil {
			return false, "", err
		}
		recs, err := harness.PoolRecords(c, st, "crash")
		if err != nil {
			return false, "", err
		}
		for _, r := range recs {
			if r.InstanceID == "" {
				return false, fmt.Sprintf("%s %s", r.Name, r.Phase), nil
			}
		}
		return true, "", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, "default", "crashapp", 3, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	after := poolInstances(t, h, "crash")
	recs, _ = harness.PoolRecords(c, st, "crash")
	ids := map[string]bool{}
	for _, r := range recs {
		ids[r.InstanceID] = true
	}
	if len(after) != len(recs) || len(after) != len(ec2Before) {
		t.Errorf("%d instances before the re-drive, %d after, %d records: want the crashed fleet's instances adopted, none more", len(ec2Before), len(after), len(recs))
	}
	for _, id := range ec2Before {
		if !ids[id] {
			t.Errorf("instance %s of the crashed fleet was not adopted", id)
		}
	}
}

// poolInstances lists the running instances tagged with the pool.
func poolInstances(t *testing.T, h *harness.Harness, pool string) []string {
	t.Helper()
	ids, err := h.PoolInstances(ctx(t), pool)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestOrphansAndUnregisteredInstancesAreTerminated: an instance with
// Nodewright's tags and no record is terminated by the sweep once older
// than the grace period; an instance whose Node never registers is
// terminated after the registration timeout and its record removed.
func TestOrphansAndUnregisteredInstancesAreTerminated(t *testing.T) {
	c := ctx(t)
	testPool(t, "never", func(np *apis.NodePool) {
		np.Spec.Template.ObjectMeta.Labels = map[string]string{nodebridge.LabelNeverRegister: "true"}
	})
	h := newHarness(t, harness.Options{Provision: provisionOpts(5*time.Second, 3*time.Second)})
	r, err := h.Reconciler(c, "provision")
	if err != nil {
		t.Fatal(err)
	}
	// An orphan: a fleet launched with our tags whose record never was.
	plan, err := r.Fleet.Prepare(c, orphanRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	insts, err := r.Fleet.LaunchPlan(c, plan)
	if err != nil {
		t.Fatal(err)
	}
	orphan := insts[0].InstanceID
	if err := harness.Deploy(c, lc, onPool("never", "neverapp", 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "neverapp", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	st, _ := harness.Store(lc)
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	recs, _ := harness.PoolRecords(c, st, "never")
	if len(recs) != 1 || recs[0].Phase != state.Launched {
		t.Fatalf("records %+v: want one launched", recs)
	}
	unregistered := recs[0].InstanceID
	if err := harness.Poll(c, 2*time.Minute, "orphan and unregistered instances terminated", func() (bool, string, error) {
		if err := h.Sweep(c); err != nil {
			return false, "", err
		}
		left := map[string]bool{}
		for _, id := range append(poolInstances(t, h, "never"), poolInstances(t, h, "orphan")...) {
			left[id] = true
		}
		return !left[orphan] && !left[unregistered], fmt.Sprint(slices.Sorted(maps.Keys(left))), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetNodeClaim(c, recs[0].Name); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("the unregistered NodeClaim's record is still there: %v", err)
	}
	// The pod is still pending; a new NodeClaim is launched for it (and
	// this one never registers either): the record count stays bounded.
}

func provisionOpts(timeout, grace time.Duration) (o provision.Options) {
	o.RegistrationTimeout, o.OrphanGrace, o.RedriveAfter = timeout, grace, 2*time.Second
	return o
}

// TestInsufficientCapacityFallsBack: the cheapest spot pool has no
// capacity: the next cheapest launches; every spot pool exhausted:
// on-demand, where the pool allows both.
func TestInsufficientCapacityFallsBack(t *testing.T) {
	c := ctx(t)
	np := testPool(t, "ice", nil)
	h := newHarness(t, harness.Options{})
	w := onPool("ice", "iceapp", 1, "3", "4Gi")
	plan := planFor(t, np, w)
	first := plan.NodeClaims[0]
	if first.CapacityType != apis.CapacityTypeSpot {
		t.Fatalf("plan %+v: want spot first", first)
	}
	cheapest := first.InstanceTypes[0]
	lc.AWS.SetCapacity(cheapest, "*", apis.CapacityTypeSpot, 0)
	t.Cleanup(func() { lc.AWS.SetCapacity(cheapest, "*", apis.CapacityTypeSpot, -1) })
	if err := harness.Deploy(c, lc, w); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "iceapp", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, "default", "iceapp", 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	st, _ := harness.Store(lc)
	recs, _ := harness.PoolRecords(c, st, "ice")
	// The next cheapest offering: the cheapest spot (type, zone) of the
	// claim's options but the exhausted type, as the local cloud prices
	// them (its fleet tries the overrides cheapest first).
	prices := pricing.Model{Catalog: catalog.Default(), Seed: lc.Options.PriceSeed}
	nextType, nextZone, nextPrice := "", "", math.Inf(1)
	for _, typ := range first.InstanceTypes {
		for _, z := range first.Zones {
			if p, ok := prices.SpotPrice(typ, z); ok && typ != cheapest && p < nextPrice {
				nextType, nextZone, nextPrice = typ, z, p
			}
		}
	}
	if len(recs) != 1 || recs[0].CapacityType != apis.CapacityTypeSpot || recs[0].InstanceType != nextType || recs[0].Zone != nextZone {
		t.Fatalf("records %+v: want one spot NodeClaim on the next cheapest offering %s in %s ($%.4f/h; %s exhausted)", recs, nextType, nextZone, nextPrice, cheapest)
	}
	// Every offering of the exhausted type the fleet tried before the one
	// it launched (those cheaper) is recorded unavailable; the launched
	// one is not.
	un, err := st.Unavailable(c)
	if err != nil {
		t.Fatal(err)
	}
	set := state.NewUnavailableSet(un)
	tried := 0
	for _, z := range first.Zones {
		if p, ok := prices.SpotPrice(cheapest, z); ok && p < nextPrice {
			tried++
			if !set.Has(cheapest, z, apis.CapacityTypeSpot) {
				t.Errorf("the refused offering %s in %s (spot) was not recorded unavailable: %v", cheapest, z, un)
			}
		}
	}
	if tried == 0 || set.Has(nextType, nextZone, apis.CapacityTypeSpot) {
		t.Errorf("unavailable %v: want the %d refused offerings of %s, not the launched %s in %s", un, tried, cheapest, nextType, nextZone)
	}
	if len(h.Metrics.Values("InsufficientCapacityErrors")) == 0 {
		t.Error("InsufficientCapacityErrors was not emitted for the refused offerings")
	}
	// Every spot pool exhausted: on-demand.
	lc.AWS.SetCapacity("*", "*", apis.CapacityTypeSpot, 0)
	t.Cleanup(func() { lc.AWS.SetCapacity("*", "*", apis.CapacityTypeSpot, -1) })
	if err := harness.Scale(c, lc, "default", "iceapp", 2); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "iceapp", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, "default", "iceapp", 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	recs, _ = harness.PoolRecords(c, st, "ice")
	var od int
	for _, r := range recs {
		if r.CapacityType == apis.CapacityTypeOnDemand {
			od++
		}
	}
	if len(recs) != 2 || od != 1 {
		t.Errorf("records %d, on-demand %d: want the second NodeClaim on-demand", len(recs), od)
	}
	// The spot launch that failed outright is a launch failure, by reason.
	failures := 0.0
	for _, v := range h.Metrics.Values("LaunchFailures") {
		failures += v
	}
	if failures < 1 {
		t.Errorf("LaunchFailures emitted %v: want the failed spot launch", h.Metrics.Values("LaunchFailures"))
	}
}

// planFor solves a workload alone on a pool, priced as the local cloud.
func planFor(t *testing.T, np *apis.NodePool, w harness.Workload) *scheduling.Result {
	t.Helper()
	var pods []*corev1.Pod
	for i := range w.Replicas {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", w.Name, i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeSelector: w.NodeSelector, Tolerations: w.Tolerations, Containers: []corev1.Container{{Name: "app",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(w.CPU), corev1.ResourceMemory: resource.MustParse(w.Memory)}}}}}}
		pods = append(pods, p)
	}
	cat := catalog.Default()
	// Each node's volumes too, as the function prices them (the local
	// cloud's subnets map no public addresses).
	costs, err := provision.NodeCosts([]*apis.NodePool{np}, deploy.NodeClasses, lc.Options.Zones, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*apis.NodePool{np}, NodeClasses: deploy.NodeClasses,
		InstanceTypes: cat.Types(), Zones: lc.Options.Zones, Spot: pricing.Model{Catalog: cat, Seed: lc.Options.PriceSeed}, NodeCosts: costs})
	if err != nil || len(res.NodeClaims) == 0 {
		t.Fatalf("plan: %v %+v", err, res)
	}
	return res
}

// TestConcurrentInvocationsLaunchOnce: ten invocations at once for the
// same pending pods, in ten containers (separate handlers, reconcilers and
// caches against the same cloud, as Lambda runs them), launch what one
// invocation launches; a NodePool's limit is never exceeded under that
// concurrency. Both pools are cluster objects (kubectl-applied), which the
// function uses.
func TestConcurrentInvocationsLaunchOnce(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	np := testPool(t, "conc", nil)
	capped := testPool(t, "capped", func(np *apis.NodePool) {
		np.Spec.Limits = apis.Limits{corev1.ResourceCPU: resource.MustParse("4")}
	})
	_ = capped
	// Ten containers, as Lambda runs ten concurrent invocations: each its
	// own handler, reconciler, cluster cache and clients.
	var hs []*harness.Harness
	for range 10 {
		hs = append(hs, newHarness(t, harness.Options{}))
	}
	w := onPool("conc", "concapp", 12, "1", "1Gi")
	wc := onPool("capped", "cappedapp", 10, "1", "1Gi")
	for _, x := range []harness.Workload{w, wc} {
		if err := harness.Deploy(c, lc, x); err != nil {
			t.Fatal(err)
		}
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "concapp", 12, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "cappedapp", 10, time.Minute); err != nil {
		t.Fatal(err)
	}
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(hs))
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.Hint(c, "default", "concapp")
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// The pods keep coming up while a sweep runs (the one-minute schedule,
	// compressed), in one container or another; the limit holds throughout.
	limitHeld := func() {
		recs, _ := harness.PoolRecords(c, st, "capped")
		var cpu resource.Quantity
		for _, r := range recs {
			cpu.Add(r.Capacity[corev1.ResourceCPU])
		}
		if cpu.Cmp(resource.MustParse("4")) > 0 {
			t.Errorf("pool capped (limit cpu 4): %d NodeClaims with %s cpu", len(recs), cpu.String())
		}
	}
	limitHeld()
	if err := harness.WaitRunning(c, lc, "default", "concapp", 12, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	limitHeld()
	recs, _ := harness.PoolRecords(c, st, "conc")
	plan := planFor(t, np, w)
	if len(recs) != len(plan.NodeClaims) {
		t.Errorf("%d NodeClaims launched by 10 concurrent invocations; one solve plans %d", len(recs), len(plan.NodeClaims))
	}
	capRecs, _ := harness.PoolRecords(c, st, "capped")
	var cpu resource.Quantity
	for _, r := range capRecs {
		cpu.Add(r.Capacity[corev1.ResourceCPU])
	}
	if cpu.Cmp(resource.MustParse("4")) > 0 || len(capRecs) == 0 {
		t.Errorf("pool capped (limit cpu 4): %d NodeClaims with %s cpu", len(capRecs), cpu.String())
	}
	counts, _ := harness.Count(c, lc, "default", "cappedapp")
	if counts.Pending == 0 {
		t.Errorf("capped: %s; want pods left pending at the limit", counts)
	}
	ev, err := lc.Kube.CoreV1().Events("default").List(c, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
	found := false
	for _, e := range ev.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, "cappedapp") && strings.Contains(e.Message, "limit") {
			found = true
		}
	}
	if err != nil || !found {
		t.Errorf("no FailedScheduling event names the limit for the capped pods (%d events, %v)", len(ev.Items), err)
	}
}

// TestGPUPool: the GPU training pod of nodepool-gpu-training.yaml gets a
// g- or p-family node with the pool's taint; pods without the toleration
// never land there.
func TestGPUPool(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	h := newHarness(t, harness.Options{})
	path, _ := refdata.Example("nodepool-gpu-training.yaml")
	b, _ := os.ReadFile(path)
	docs := strings.Split(string(b), "\n---\n")
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &pod); err != nil {
		t.Fatal(err)
	}
	pod.Namespace = "default"
	if _, err := lc.Kube.CoreV1().Pods("default").Create(c, &pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hintWhenUnschedulable(t, h, pod.Name)
	node := nodeOnceRunning(t, pod.Name, 2*time.Minute)
	cat := node.Labels[apis.LabelInstanceCategory]
	if cat != "g" && cat != "p" || node.Labels[apis.LabelNodePool] != "gpu-training" {
		t.Errorf("GPU pod on %s (category %q, pool %q)", node.Labels[apis.LabelInstanceType], cat, node.Labels[apis.LabelNodePool])
	}
	tainted := false
	for _, tn := range node.Spec.Taints {
		tainted = tainted || (tn.Key == "nvidia.com/gpu" && tn.Effect == corev1.TaintEffectNoSchedule)
	}
	if !tainted {
		t.Errorf("GPU node taints %v, want the pool's nvidia.com/gpu", node.Spec.Taints)
	}
	// A pod without the toleration pinned to the GPU node stays pending.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "no-toleration", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "", NodeSelector: map[string]string{apis.LabelHostname: node.Labels[apis.LabelHostname]},
			Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
	if _, err := lc.Kube.CoreV1().Pods("default").Create(c, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(c, time.Minute, "the pod without toleration unschedulable", func() (bool, string, error) {
		p, err := lc.Kube.CoreV1().Pods("default").Get(c, plain.Name, metav1.GetOptions{})
		return err == nil && podstate.Provisionable(p), "", err
	}); err != nil {
		t.Fatal(err)
	}
	p, _ := lc.Kube.CoreV1().Pods("default").Get(c, plain.Name, metav1.GetOptions{})
	if p.Spec.NodeName != "" {
		t.Errorf("a pod without the toleration landed on the GPU node")
	}
}

// TestDeleteNodeDrainsAndTerminates: `kubectl delete node` on a node the
// function launched evicts its pods (they run again elsewhere), terminates
// the instance and removes the record.
func TestDeleteNodeDrainsAndTerminates(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	testPool(t, "del", nil)
	h := newHarness(t, harness.Options{})
	if err := harness.Deploy(c, lc, onPool("del", "delapp", 3, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", "delapp", 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, "default", "delapp", 3, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	nodes := nodesOf(t, "delapp", "default")
	var victim *corev1.Node
	for _, n := range nodes {
		victim = n
		break
	}
	// The sweep registers the node and puts Karpenter's finalizer on it
	// (the schedule, compressed: a sweep a second).
	var last time.Time
	if err := harness.Poll(c, 2*time.Minute, "the node's finalizer", func() (bool, string, error) {
		if time.Since(last) > time.Second {
			last = time.Now()
			if err := h.Sweep(c); err != nil {
				return false, "", err
			}
		}
		n, err := lc.Kube.CoreV1().Nodes().Get(c, victim.Name, metav1.GetOptions{})
		return err == nil && slices.Contains(n.Finalizers, apis.FinalizerTermination), fmt.Sprintf("finalizers %v", n.Finalizers), err
	}); err != nil {
		t.Fatal(err)
	}
	disrupted, err := harness.WatchDisrupted(c, lc, victim.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := lc.Kube.CoreV1().Nodes().Delete(c, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	instance := instanceOf(victim)
	last = time.Time{}
	if err := harness.Poll(c, 3*time.Minute, "the deleted node drained, gone, its instance terminated", func() (bool, string, error) {
		if time.Since(last) > time.Second { // the schedule, compressed
			last = time.Now()
			if err := h.Sweep(c); err != nil {
				return false, "", err
			}
		}
		_, err := lc.Kube.CoreV1().Nodes().Get(c, victim.Name, metav1.GetOptions{})
		gone := err != nil
		running := slices.Contains(poolInstances(t, h, "del"), instance)
		return gone && !running, fmt.Sprintf("node gone %v, instance running %v", gone, running), nil
	}); err != nil {
		t.Fatal(err)
	}
	if tainted, cordoned := disrupted(); !tainted || !cordoned {
		t.Errorf("the deleted node: tainted %v, cordoned %v; want both before its pods were evicted, so none came back", tainted, cordoned)
	}
	if err := harness.WaitRunning(c, lc, "default", "delapp", 3, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	st, _ := harness.Store(lc)
	recs, _ := harness.PoolRecords(c, st, "del")
	for _, r := range recs {
		if r.InstanceID == instance {
			t.Errorf("record %s of the deleted node remains", r.Name)
		}
	}
}

// decodeDeployment reads a Deployment manifest strictly.
func decodeDeployment(b []byte) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// orphanRequest is a fleet request with Nodewright's tags for a NodeClaim
// that has no record (as a crash between a launch and the record's
// removal would leave).
func orphanRequest(t *testing.T) fleet.Request {
	t.Helper()
	return fleet.Request{Name: "orphan-zzzzz", NodeClass: deploy.NodeClasses[0], Count: 1, Claim: scheduling.NodeClaim{
		NodePool: "orphan", NodeClass: deploy.NodeClasses[0].Name, InstanceTypes: []string{"m6g.large"}, Zones: []string{"us-east-1a"},
		CapacityType: apis.CapacityTypeOnDemand, CapacityTypes: []string{apis.CapacityTypeOnDemand},
	}}
}

// gettingStarted is the users' getting-started pair (getting-started.yaml:
// on-demand amd64 c/m/t types of 2 or 4 vCPUs, an 8-vCPU limit) for this
// suite's cluster: the EC2NodeClass discovers this cluster's subnets and
// security groups (the file names demo-cluster), and the NodePool is called
// getting-started, so that its records and limit stand apart from the seed
// scenario's default pool.
func gettingStarted(t *testing.T) *apis.Config {
	t.Helper()
	cfg, err := harness.Examples("getting-started.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.NodePools) != 1 || len(cfg.NodeClasses) != 1 {
		t.Fatalf("getting-started.yaml: %d NodePools, %d EC2NodeClasses", len(cfg.NodePools), len(cfg.NodeClasses))
	}
	cfg.NodePools[0].Name = "getting-started"
	nc := cfg.NodeClasses[0]
	for i := range nc.Spec.SubnetSelectorTerms {
		for k := range nc.Spec.SubnetSelectorTerms[i].Tags {
			nc.Spec.SubnetSelectorTerms[i].Tags[k] = lc.Cluster.Name
		}
	}
	for i := range nc.Spec.SecurityGroupSelectorTerms {
		for k := range nc.Spec.SecurityGroupSelectorTerms[i].Tags {
			nc.Spec.SecurityGroupSelectorTerms[i].Tags[k] = lc.Cluster.Name
		}
	}
	return cfg
}

// TestGettingStartedLimit: inflate (250m/64Mi pods, pinned to the
// getting-started pool by its NodePool label) scaled to 40 on the
// getting-started pool: the capacity launched (the vCPUs of the pool's
// NodeClaims' instance types) never exceeds the 8-vCPU limit, while rounds
// and sweeps keep coming; the pods left over stay pending, each told why:
// an event naming the NodePool's limit.
func TestGettingStartedLimit(t *testing.T) {
	c := ctx(t)
	cfg := gettingStarted(t)
	const pool = "getting-started"
	h := newHarness(t, harness.Options{NodePools: cfg.NodePools, NodeClasses: cfg.NodeClasses})
	d := exampleInflate(t)
	const app = "gs-inflate"
	d.Name = app
	d.Spec.Selector.MatchLabels = map[string]string{"app": app}
	d.Spec.Template.Labels = map[string]string{"app": app}
	d.Spec.Template.Spec.NodeSelector = map[string]string{apis.LabelNodePool: pool}
	replicas := int32(40)
	d.Spec.Replicas = &replicas
	if _, err := lc.Kube.AppsV1().Deployments("default").Create(c, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.Default()
	vcpus := func() (int, []string) {
		recs, err := harness.PoolRecords(c, st, pool)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var types []string
		for _, r := range recs {
			typ := r.InstanceType
			if typ == "" && len(r.Claim.InstanceTypes) > 0 {
				typ = r.Claim.InstanceTypes[0] // launching: its cheapest option
			}
			it, ok := cat.Get(typ)
			if !ok {
				t.Fatalf("record %s: unknown type %q", r.Name, typ)
			}
			n += it.VCPU
			types = append(types, fmt.Sprintf("%s %s %s", r.Name, typ, r.Phase))
		}
		return n, types
	}
	if err := harness.WaitUnschedulable(c, lc, "default", app, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	pods, _ := harness.Pods(c, lc, "default", app)
	if err := h.Hint(c, "default", pods[0].Name); err != nil {
		t.Fatal(err)
	}
	// Sweeps every few seconds (the schedule, compressed) until the pool's
	// nodes run what fits and the rest is left pending; the limit holds
	// at every look.
	var last time.Time
	var counts harness.Counts
	if err := harness.Poll(c, 3*time.Minute, "the pool at its limit, its nodes running what fits", func() (bool, string, error) {
		if time.Since(last) > 3*time.Second {
			last = time.Now()
			if err := h.Sweep(c); err != nil {
				return false, "", err
			}
		}
		n, types := vcpus()
		if n > 8 {
			t.Fatalf("the pool's NodeClaims have %d vCPUs, over its limit of 8: %v", n, types)
		}
		counts, err = harness.Count(c, lc, "default", app)
		if err != nil {
			return false, "", err
		}
		recs, _ := harness.PoolRecords(c, st, pool)
		initialized := len(recs) > 0
		for _, r := range recs {
			initialized = initialized && r.Phase == state.Initialized
		}
		return initialized && counts.Total == 40 && counts.Running > 0 && counts.Running+counts.Unschedulable == 40,
			fmt.Sprintf("%s; %d vCPUs: %v", counts, n, types), nil
	}); err != nil {
		t.Fatal(err)
	}
	// Another sweep with pods pending launches nothing more.
	before, _ := vcpus()
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	n, types := vcpus()
	if n != before || n > 8 {
		t.Errorf("after a sweep with pods pending: %d vCPUs (before %d): %v", n, before, types)
	}
	// 8 vCPUs hold at most 31 of the pods (each node keeps some for the
	// kubelet and the system): at least 9 stay pending.
	if counts.Unschedulable < 9 {
		t.Errorf("%s: want at least 9 left pending at the limit", counts)
	}
	t.Logf("%s on %d vCPUs: %v", counts, n, types)
	ev, err := lc.Kube.CoreV1().Events("default").List(c, metav1.ListOptions{FieldSelector: "reason=FailedScheduling,involvedObject.kind=Pod"})
	if err != nil {
		t.Fatal(err)
	}
	told := map[string]bool{}
	for _, e := range ev.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, app+"-") && strings.Contains(e.Message, "NodePool "+pool+" would exceed its cpu limit") {
			told[e.InvolvedObject.Name] = true
		}
	}
	pods, _ = harness.Pods(c, lc, "default", app)
	for _, p := range pods {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !told[p.Name] {
			t.Errorf("pending pod %s has no event naming the NodePool's limit", p.Name)
		}
	}
}
