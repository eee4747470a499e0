package disruption

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
)

// The design point of issue 22: 5,000 nodes and 150,000 pods.
const (
	scaleNodes = 5_000
	scalePods  = 150_000
)

// scaleTickEvery is how far the functions' clock moves between two ticks:
// the consolidation schedule's default rate (infra/stack: rate(5 minutes)),
// past the production NodePool's consolidateAfter (30s); its budget
// (10% of nodes) has no schedule, so every tick sees it whole.
const scaleTickEvery = 5 * time.Minute

// scaleDeployment is one Deployment of the scale cluster: its replicas
// share one request.
type scaleDeployment struct {
	name     string
	cpu, mem string
	replicas int
}

// scaleModel is a cluster the consolidation decisions act on, with no I/O:
// the production NodePool (examples/nodepool-default.yaml, limits lifted)
// on the real catalog with the deterministic spot price model. Pods belong
// to Deployments; nodes are what provision would have launched for them
// (one solve over every pod), so the cluster starts near the lower bound.
type scaleModel struct {
	now     time.Time
	pool    *apis.NodePool
	class   *apis.EC2NodeClass
	cat     *catalog.Catalog
	spot    pricing.Model
	zones   []string
	deps    []scaleDeployment
	nodes   map[string]*corev1.Node
	records map[string]*state.NodeClaim // by Node name
	pods    map[string]*corev1.Pod      // by namespace/name
	seq     int
	// until stops a convergence run at this wall-clock time (zero: never).
	until time.Time
}

// productionPool is the users' production NodePool and its EC2NodeClass
// from the shared examples, the pool's limits lifted (5,000 nodes are far
// above its 1,000 vCPU).
func productionPool(tb testing.TB) (*apis.NodePool, *apis.EC2NodeClass) {
	tb.Helper()
	var paths []string
	for _, f := range []string{"nodepool-default.yaml", "ec2nodeclass-default.yaml"} {
		p, err := refdata.Example(f)
		if err != nil {
			tb.Fatal(err)
		}
		paths = append(paths, p)
	}
	cfg, err := apis.LoadFiles(paths...)
	if err != nil {
		tb.Fatal(err)
	}
	var pool *apis.NodePool
	var class *apis.EC2NodeClass
	for _, p := range cfg.NodePools {
		if p.Name == "default" {
			pool = p
		}
	}
	for _, c := range cfg.NodeClasses {
		if c.Name == "default" {
			class = c
		}
	}
	if pool == nil || class == nil {
		tb.Fatal("no default NodePool or EC2NodeClass in the examples")
	}
	pool.Spec.Limits = nil
	return pool, class
}

// newScaleModel builds the cluster at fraction f of the design point:
// round(150,000 f) pods in Deployments of 20 to 180 replicas, each with one
// of 25 requests (500m..1500m cpu, 1..6 GiB), placed by one solve over
// every pod (the nodes provision would launch). About 30 pods a node.
func newScaleModel(tb testing.TB, f float64) *scaleModel {
	tb.Helper()
	pool, class := productionPool(tb)
	cat := catalog.Default()
	m := &scaleModel{
		now: now, pool: pool, class: class, cat: cat, spot: pricing.Model{Catalog: cat},
		zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		nodes: map[string]*corev1.Node{}, records: map[string]*state.NodeClaim{}, pods: map[string]*corev1.Pod{},
	}
	cpus := []string{"500m", "750m", "1", "1250m", "1500m"}
	mems := []string{"1Gi", "2Gi", "3Gi", "4Gi", "6Gi"}
	rng := rand.New(rand.NewSource(22))
	total := int(math.Round(scalePods * f))
	var pending []*corev1.Pod
	for left := total; left > 0; {
		d := scaleDeployment{name: fmt.Sprintf("app-%04d", len(m.deps)), cpu: cpus[rng.Intn(len(cpus))], mem: mems[rng.Intn(len(mems))],
			replicas: min(left, 20+rng.Intn(161))}
		left -= d.replicas
		m.deps = append(m.deps, d)
		for r := range d.replicas {
			p := st.Pod(st.PodOptions{Name: fmt.Sprintf("%s-%d", d.name, r), CPU: d.cpu, Memory: d.mem,
				Owner: "ReplicaSet/" + d.name, Labels: map[string]string{"app": d.name}})
			m.pods[podKey(p)] = p
			pending = append(pending, p)
		}
	}
	if err := m.place(pending, nil); err != nil {
		tb.Fatal(err)
	}
	// The cluster has run for two days; its pods last changed an hour ago.
	for _, r := range m.records {
		r.CreatedAt, r.InitializedAt, r.PodsChangedAt = m.now.Add(-48*time.Hour), m.now.Add(-47*time.Hour), m.now.Add(-time.Hour)
	}
	return m
}

// place puts unbound pods on the cluster as provision and the kube
// scheduler would: on the nodes' free room first, then on the new nodes one
// solve plans (each at its cheapest type, in that type's cheapest zone).
// The nodes that receive pods have their pods changed now.
func (m *scaleModel) place(pods []*corev1.Pod, extra []*scheduling.Node) error {
	if len(pods) == 0 {
		return nil
	}
	nodes := append([]*scheduling.Node(nil), extra...)
	on := m.byNode()
	for _, name := range m.nodeNames() {
		n := m.nodes[name]
		free := *n
		free.Status.Allocatable = subtractPods(n.Status.Allocatable, on[name])
		nodes = append(nodes, &scheduling.Node{Node: &free})
	}
	res, err := scheduling.Solve(scheduling.Input{Pods: pods, Nodes: nodes, NodePools: []*apis.NodePool{m.pool},
		NodeClasses: []*apis.EC2NodeClass{m.class}, InstanceTypes: m.cat.Types(), Zones: m.zones, Spot: m.spot})
	if err != nil {
		return fmt.Errorf("place %d pods: %w", len(pods), err)
	}
	if len(res.Unschedulable) > 0 {
		return fmt.Errorf("place %d pods: %d unschedulable, first %s: %s", len(pods), len(res.Unschedulable), res.Unschedulable[0].Pod, res.Unschedulable[0].Reason)
	}
	bind := func(node string, keys []string) {
		for _, k := range keys {
			m.pods[k].Spec.NodeName = node
			m.pods[k].Status.Phase = corev1.PodRunning
		}
		if r := m.records[node]; r != nil && len(keys) > 0 {
			r.PodsChangedAt = m.now
		}
	}
	for _, pl := range res.ExistingNodes {
		bind(pl.Node, pl.Pods)
	}
	for _, nc := range res.NodeClaims {
		name := m.launch(nc)
		bind(name, nc.Pods)
	}
	return nil
}

// launch adds the node a NodeClaim becomes: its first (cheapest) type and
// capacity type, in the cheapest of its zones for them, initialized now.
func (m *scaleModel) launch(nc scheduling.NodeClaim) string {
	it, ok := m.cat.Get(nc.InstanceTypes[0])
	if !ok {
		panic("unknown type " + nc.InstanceTypes[0])
	}
	ct := nc.CapacityType
	if ct == "" {
		ct = nc.CapacityTypes[0]
	}
	zone, best := "", math.Inf(1)
	for _, z := range nc.Zones {
		if p := m.offering(it.Name, z, ct); p < best {
			zone, best = z, p
		}
	}
	i := m.seq
	m.seq++
	name := fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", i/65536, i/256%256, i%256)
	n := st.Node(st.NodeOptions{Name: name, InstanceType: it, Zone: zone, CapacityType: ct, NodePool: m.pool.Name}).Node
	capacity, alloc := it.Compute(catalog.SettingsFor(m.class))
	n.Status.Capacity, n.Status.Allocatable = capacity.ResourceList(), alloc.ResourceList()
	r := &state.NodeClaim{
		Name: fmt.Sprintf("default-%06d", i), NodePool: m.pool.Name, NodeClass: m.class.Name, Phase: state.Initialized,
		InstanceID: fmt.Sprintf("i-%017d", i), InstanceType: it.Name, Zone: zone, CapacityType: ct, ImageID: "ami-1",
		CreatedAt: m.now, InitializedAt: m.now, PodsChangedAt: m.now, NodePoolHash: m.pool.Hash(), NodeClassHash: m.class.Hash(),
	}
	n.Spec.ProviderID = state.ProviderIDFor(zone, r.InstanceID)
	m.nodes[name], m.records[name] = n, r
	return name
}

// offering is an offering's price now (+Inf when not offered).
func (m *scaleModel) offering(typ, zone, capacityType string) float64 {
	it, ok := m.cat.Get(typ)
	if !ok {
		return math.Inf(1)
	}
	if capacityType == apis.CapacityTypeSpot {
		if p, ok := m.spot.SpotPrice(typ, zone); ok && it.OfferedIn(zone) {
			return p
		}
		return math.Inf(1)
	}
	return it.OnDemandPrice
}

func (m *scaleModel) nodeNames() []string {
	names := make([]string, 0, len(m.nodes))
	for name := range m.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// byNode indexes the bound pods by node.
func (m *scaleModel) byNode() map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range m.pods {
		if p.Spec.NodeName != "" {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out
}

// inputs is the cluster as a tick reads it, with the consolidation
// function's default work budget (orchestration.DefaultDecideSolves and
// provision.DefaultSolveGroups: the package cannot import them), its
// deadline orchestration.DefaultDecideTime away on the wall clock.
func (m *scaleModel) inputs() Inputs {
	in := Inputs{
		Now: m.now, NodePools: []*apis.NodePool{m.pool}, NodeClasses: []*apis.EC2NodeClass{m.class}, Catalog: m.cat, Zones: m.zones,
		Spot: m.spot, SpotToSpot: true, Budget: Budget{MaxSolves: 5_000, MaxGroups: 20_000, Deadline: time.Now().Add(5 * time.Minute)},
	}
	for _, name := range m.nodeNames() {
		in.Nodes = append(in.Nodes, m.nodes[name])
		in.Records = append(in.Records, m.records[name])
	}
	keys := make([]string, 0, len(m.pods))
	for k := range m.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		in.Pods = append(in.Pods, m.pods[k])
	}
	return in
}

// price is the cluster's price per hour: every node at its offering's
// price now.
func (m *scaleModel) price() float64 {
	sum := 0.0
	for _, r := range m.records {
		sum += m.offering(r.InstanceType, r.Zone, r.CapacityType)
	}
	return roundPrice(sum)
}

// lowerBound is the solver's lower bound (scheduling.Result's
// LowerBoundPricePerHour) for every pod of the cluster on new capacity of
// the pool: a price no placement of them can beat; and the price of the
// plan provision would launch for them all today (the same solve).
func (m *scaleModel) lowerBound(tb testing.TB) (bound, plan float64) {
	tb.Helper()
	pods := make([]*corev1.Pod, 0, len(m.pods))
	for _, p := range m.inputs().Pods {
		c := *p
		c.Spec.NodeName = ""
		c.Status.Phase = corev1.PodPending
		pods = append(pods, &c)
	}
	res, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*apis.NodePool{m.pool}, NodeClasses: []*apis.EC2NodeClass{m.class},
		InstanceTypes: m.cat.Types(), Zones: m.zones, Spot: m.spot})
	if err != nil {
		tb.Fatal(err)
	}
	return res.LowerBoundPricePerHour, res.PricePerHour
}

// underuse empties 5% of the nodes (every twentieth, by name) down to
// three pods each, as a scale-down an hour ago would leave them, and
// returns how many nodes it touched.
func (m *scaleModel) underuse() int {
	on := m.byNode()
	touched := 0
	for i, name := range m.nodeNames() {
		if i%20 != 10 {
			continue
		}
		pods := on[name]
		sort.Slice(pods, func(a, b int) bool { return podKey(pods[a]) < podKey(pods[b]) })
		for _, p := range pods[min(3, len(pods)):] {
			delete(m.pods, podKey(p))
		}
		m.records[name].PodsChangedAt = m.now.Add(-time.Hour)
		touched++
	}
	return touched
}

// scaleDown halves every Deployment, as its ReplicaSet would: the
// replicas removed are those on the nodes that run the most of its
// replicas first (the ReplicaSet controller's ranking), then the newest
// (highest ordinal), so the pods removed are spread across the nodes. The
// nodes that lost pods have their pods changed now.
func (m *scaleModel) scaleDown() {
	byDep := map[string][]*corev1.Pod{}
	for _, p := range m.pods {
		byDep[p.Labels["app"]] = append(byDep[p.Labels["app"]], p)
	}
	for i := range m.deps {
		d := &m.deps[i]
		pods := byDep[d.name]
		count := map[string]int{}
		for _, p := range pods {
			count[p.Spec.NodeName]++
		}
		sort.Slice(pods, func(a, b int) bool {
			ca, cb := count[pods[a].Spec.NodeName], count[pods[b].Spec.NodeName]
			if ca != cb {
				return ca > cb
			}
			return podKey(pods[a]) > podKey(pods[b])
		})
		remove := len(pods) / 2
		for _, p := range pods[:remove] {
			delete(m.pods, podKey(p))
			count[p.Spec.NodeName]--
			if r := m.records[p.Spec.NodeName]; r != nil {
				r.PodsChangedAt = m.now
			}
		}
		d.replicas -= remove
	}
}

// apply carries out a command on the model as the consolidation function
// would: its replacements launch (each at its cheapest type, in that
// type's cheapest zone), its nodes go, and their pods are placed again
// (on the nodes' free room and the replacements, as the simulation placed
// them; any the solve cannot fit go on new nodes, as provision would).
func (m *scaleModel) apply(tb testing.TB, cmd Command) {
	tb.Helper()
	var displaced []*corev1.Pod
	on := m.byNode()
	for _, name := range cmd.Nodes {
		for _, p := range on[name] {
			p.Spec.NodeName = ""
			displaced = append(displaced, p)
		}
		delete(m.nodes, name)
		delete(m.records, name)
	}
	for _, nc := range cmd.Replacements {
		nc.Pods = nil
		m.launch(nc)
	}
	sort.Slice(displaced, func(a, b int) bool { return podKey(displaced[a]) < podKey(displaced[b]) })
	if err := m.place(displaced, nil); err != nil {
		tb.Fatal(err)
	}
}

// stallTicks and stallGain: a run has stalled once stallTicks ticks in a
// row each took less than stallGain off the cluster's price (single-node
// replacing one node at a time for cents an hour).
const (
	stallTicks = 3
	stallGain  = 0.005
)

// stalled says whether the last ticks have stalled.
func stalled(ticks []scaleTick) bool {
	if len(ticks) <= stallTicks {
		return false
	}
	for i := len(ticks) - stallTicks; i < len(ticks); i++ {
		if ticks[i].Price < ticks[i-1].Price*(1-stallGain) {
			return false
		}
	}
	return true
}

// scaleTick is one consolidation tick on the model.
type scaleTick struct {
	Method                  Method
	Nodes, Replacements     int
	Solves, Candidates      int
	BudgetSpent             string
	Price, LowerBound, Plan float64
	Ratio                   float64
	ClusterNodes, Pods      int
	Wall                    time.Duration
}

// converge runs up to maxTicks ticks on the model, the first one
// scaleTickEvery after the last change: each decides on the
// cluster as it is, carries out the first command (a tick starts one
// action and carries it to its end), and moves the functions' clock on by
// scaleTickEvery. It stops after a tick that decides nothing, when it has
// stalled (stalled), or once the
// wall clock passes m.until. each, when not nil, sees every tick as it
// ends. Each tick's
// line has the cluster's price and the lower bound after it.
func (m *scaleModel) converge(tb testing.TB, maxTicks int, each func(int, scaleTick)) []scaleTick {
	tb.Helper()
	var out []scaleTick
	m.now = m.now.Add(scaleTickEvery)
	// Ticks move pods, never add or remove them: the bound (and the fresh
	// plan) of the pods is the same after every tick.
	bound, plan := m.lowerBound(tb)
	for range maxTicks {
		t0 := time.Now()
		cmds, rep := Decide(m.inputs())
		t := scaleTick{Solves: rep.Solves, Candidates: rep.Candidates, BudgetSpent: rep.BudgetSpent, Wall: time.Since(t0)}
		if len(cmds) > 0 {
			t.Method, t.Nodes, t.Replacements = cmds[0].Method, len(cmds[0].Nodes), len(cmds[0].Replacements)
			m.apply(tb, cmds[0])
		}
		m.now = m.now.Add(scaleTickEvery)
		t.Price, t.LowerBound, t.Plan = m.price(), bound, plan
		t.Ratio = t.Price / t.LowerBound
		t.ClusterNodes, t.Pods = len(m.nodes), len(m.pods)
		out = append(out, t)
		if each != nil {
			each(len(out), t)
		}
		if len(cmds) == 0 || (!m.until.IsZero() && time.Now().After(m.until)) || stalled(out) {
			break
		}
	}
	return out
}

// TestConsolidationConverges is the convergence run at 2% of the design
// point (110 nodes, 3,000 pods; BenchmarkConsolidationConvergence runs the
// larger sizes): after half of every Deployment's replicas go, each tick
// leaves the cluster no dearer, the ticks end (one decides nothing, or
// they stall) within 15, and the cluster ends within 1.35x of the lower bound, close to what
// a fresh plan for its pods costs (itself 1.2x the bound here).
func TestConsolidationConverges(t *testing.T) {
	m := newScaleModel(t, 0.02)
	m.scaleDown()
	before, _ := m.lowerBound(t)
	start := m.price() / before
	ticks := m.converge(t, 15, nil)
	prev := start
	for i, k := range ticks {
		t.Logf("tick %d: %s of %d nodes (%d replacements), %d solves: %d nodes, $%.2f/h, bound $%.2f/h, ratio %.3f (a fresh plan %.3f)",
			i+1, k.Method, k.Nodes, k.Replacements, k.Solves, k.ClusterNodes, k.Price, k.LowerBound, k.Ratio, k.Plan/k.LowerBound)
		if k.Ratio > prev+1e-9 {
			t.Errorf("tick %d: ratio %.3f, up from %.3f", i+1, k.Ratio, prev)
		}
		prev = k.Ratio
	}
	last := ticks[len(ticks)-1]
	if last.Method != "" && !stalled(ticks) {
		t.Errorf("still consolidating after %d ticks", len(ticks))
	}
	if start < 1.8 || last.Ratio > 1.35 {
		t.Errorf("ratio %.3f after the scale-down, %.3f after %d ticks; want at least 1.8, then at most 1.35", start, last.Ratio, len(ticks))
	}
}
