package schedtest

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/requirements"
)

// ShapeType is an instance type a shape's pool may launch: what a pod can
// use on it (allocatable less the shape's DaemonSets) and its cheapest
// offering per zone among those the pool allows.
type ShapeType struct {
	Name  string
	Alloc [3]int64 // milli-cpu, memory bytes, pods
	// ZonePrice is the cheapest allowed offering in each zone of the shape
	// (+Inf where none).
	ZonePrice []float64
	// Price is the cheapest allowed offering in any zone.
	Price float64
	// Burst is a burstable type's baseline and credit mode (zero: not
	// burstable); DaemonCPU the shape's DaemonSets' CPU on the node.
	Burst     catalog.Burst
	DaemonCPU int64
	// NodeCost is what a node of the pool costs beyond its instance
	// (Shape.NodeCosts).
	NodeCost float64
}

// NodePrice is a node's whole price at an offering of price when its pods
// request cpu millicores: the offering, the pool's node cost and a
// burstable type's surplus (catalog.Burst.SurplusPerHour, with the
// DaemonSets' requests).
func (t ShapeType) NodePrice(price float64, cpu int64) float64 {
	return price + t.NodeCost + t.Burst.SurplusPerHour(cpu+t.DaemonCPU)
}

// ShapeTypes lists the ordinary (not GPU, accelerator or bare-metal) types
// the shape's first NodePool may launch.
func ShapeTypes(s Shape) ([]ShapeType, error) {
	np := s.NodePools[0]
	reqs, err := requirements.FromNodePool(np)
	if err != nil {
		return nil, err
	}
	var nc *apis.EC2NodeClass
	for _, c := range s.NodeClasses {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == c.Name {
			nc = c
		}
	}
	settings := catalog.SettingsFor(nc)
	nodeCost := s.NodeCosts()[np.Name]
	var out []ShapeType
	for _, it := range s.Types {
		if it.Exotic() {
			continue
		}
		labels := it.Labels()
		for k, v := range np.Spec.Template.ObjectMeta.Labels {
			labels[k] = v
		}
		labels[apis.LabelNodePool] = np.Name
		st := ShapeType{Name: it.Name, ZonePrice: make([]float64, len(s.Zones)), Price: math.Inf(1), NodeCost: nodeCost}
		for i := range st.ZonePrice {
			st.ZonePrice[i] = math.Inf(1)
		}
		for _, o := range it.Offerings(s.Zones, s.SpotPricer) {
			labels[apis.LabelZone], labels[apis.LabelCapacityType] = o.Zone, o.CapacityType
			if !reqs.Matches(labels) {
				continue
			}
			for i, z := range s.Zones {
				if z == o.Zone {
					st.ZonePrice[i] = min(st.ZonePrice[i], o.Price)
				}
			}
			st.Price = min(st.Price, o.Price)
		}
		if math.IsInf(st.Price, 1) {
			continue
		}
		_, a := it.Compute(settings)
		st.Alloc = [3]int64{a.MilliCPU, a.MemoryBytes, a.Pods}
		if b, ok := it.Burstable(); ok {
			st.Burst = b
			if b.Mode == catalog.CreditsStandard {
				st.Alloc[0] = min(st.Alloc[0], b.BaselineMilliCPU) // standard mode: no more than the baseline
			}
		}
		for _, ds := range s.DaemonSets {
			r := requestsOf(&corev1.Pod{Spec: ds.Spec.Template.Spec})
			for i := range st.Alloc {
				st.Alloc[i] -= r[i]
			}
			st.DaemonCPU += r[0]
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// requestsOf is a pod's cpu, memory and one pod slot.
func requestsOf(p *corev1.Pod) [3]int64 {
	rl := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	return [3]int64{rl.Cpu().MilliValue(), rl.Memory().Value(), 1}
}

// demand is a Deployment of a shape as the helpers see it.
type demand struct {
	req    [3]int64
	n      int
	spread bool
}

func demands(s Shape) []demand {
	byApp := map[string]*demand{}
	var order []string
	for _, p := range s.Pods {
		app := p.Labels["app"]
		d := byApp[app]
		if d == nil {
			d = &demand{req: requestsOf(p), spread: len(p.Spec.TopologySpreadConstraints) > 0}
			byApp[app] = d
			order = append(order, app)
		}
		d.n++
	}
	out := make([]demand, len(order))
	for i, app := range order {
		out[i] = *byApp[app]
	}
	return out
}

func fitsIn(used, req, alloc [3]int64) bool {
	for i := range used {
		if used[i]+req[i] > alloc[i] {
			return false
		}
	}
	return true
}

// NodeGroupBaseline is what the shape costs on one fixed node group of the
// best single instance type, as a cluster with a managed node group and
// kube-scheduler would run it: for each type, pods first-fit-decreasing onto
// nodes of that type (those of a zonally spread Deployment balanced over
// the zones, the extra ones in the type's cheapest zones; the others in its
// cheapest zone), each node at the type's cheapest allowed offering in its
// zone with its whole-node extras (ShapeType.NodePrice). It returns the
// cheapest type's total and name.
func NodeGroupBaseline(s Shape) (float64, string, error) {
	types, err := ShapeTypes(s)
	if err != nil {
		return 0, "", err
	}
	ds := demands(s)
	best, bestName := math.Inf(1), ""
	for _, t := range types {
		zones := make([]int, len(s.Zones))
		for i := range zones {
			zones[i] = i
		}
		sort.SliceStable(zones, func(a, b int) bool { return t.ZonePrice[zones[a]] < t.ZonePrice[zones[b]] })
		perZone := make([][]demand, len(s.Zones))
		for _, d := range ds {
			if !d.spread {
				perZone[zones[0]] = append(perZone[zones[0]], d)
				continue
			}
			for i, z := range zones {
				n := d.n / len(zones)
				if i < d.n%len(zones) {
					n++
				}
				if n > 0 {
					perZone[z] = append(perZone[z], demand{req: d.req, n: n})
				}
			}
		}
		total := 0.0
		for z, list := range perZone {
			nodes, ok := firstFitDecreasing(list, t.Alloc)
			if !ok {
				total = math.Inf(1)
				break
			}
			for _, cpu := range nodes {
				total += t.NodePrice(t.ZonePrice[z], cpu)
			}
		}
		if total < best {
			best, bestName = total, t.Name
		}
	}
	if math.IsInf(best, 1) {
		return 0, "", fmt.Errorf("shape %s: no single type holds every pod", s.Name)
	}
	return best, bestName, nil
}

// firstFitDecreasing packs the demands onto nodes of one allocatable, largest
// pods first, each on the first node with room; it returns each node's
// requested cpu, false when a pod fits none.
func firstFitDecreasing(ds []demand, alloc [3]int64) ([]int64, bool) {
	var pods [][3]int64
	for _, d := range ds {
		for range d.n {
			pods = append(pods, d.req)
		}
	}
	sort.SliceStable(pods, func(i, j int) bool {
		if pods[i][0] != pods[j][0] {
			return pods[i][0] > pods[j][0]
		}
		return pods[i][1] > pods[j][1]
	})
	var nodes [][3]int64
	for _, p := range pods {
		placed := false
		for i := range nodes {
			if fitsIn(nodes[i], p, alloc) {
				for k := range p {
					nodes[i][k] += p[k]
				}
				placed = true
				break
			}
		}
		if !placed {
			if !fitsIn([3]int64{}, p, alloc) {
				return nil, false
			}
			nodes = append(nodes, p)
		}
	}
	cpu := make([]int64, len(nodes))
	for i, n := range nodes {
		cpu[i] = n[0]
	}
	return cpu, true
}

// MaxOptimumStates bounds the search of Optimum: the product over the
// shape's Deployments of (replicas + 1).
const MaxOptimumStates = 5000

// Optimum is the cheapest any plan can be for a shape whose pods have no
// topology constraint: every way to cover the Deployments' replicas with
// nodes, each node a mix of replicas that fits some allowed type and costs
// the cheapest such type's cheapest offering in any zone, with the pool's
// node cost and a burstable type's surplus for the mix's CPU. It searches
// exhaustively, by dynamic programming over the replicas still to place, so
// it answers only small shapes (ok false when the shape has a topology
// spread or more than MaxOptimumStates states).
func Optimum(s Shape) (price float64, ok bool, err error) {
	ds := demands(s)
	states := 1
	for _, d := range ds {
		if d.spread {
			return 0, false, nil
		}
		states *= d.n + 1
		if states > MaxOptimumStates {
			return 0, false, nil
		}
	}
	types, err := ShapeTypes(s)
	if err != nil {
		return 0, false, err
	}
	// Mixed-radix encoding of a vector of replica counts.
	radix := make([]int, len(ds))
	r := 1
	for i, d := range ds {
		radix[i] = r
		r *= d.n + 1
	}
	vecs := make([][]int, states)
	for x := range vecs {
		vecs[x] = make([]int, len(ds))
		for i, d := range ds {
			vecs[x][i] = (x / radix[i]) % (d.n + 1)
		}
	}
	decode := func(x int) []int { return vecs[x] }
	// cost[c] is the cheapest type that holds the mix c of replicas.
	cost := make([]float64, states)
	var mixes []int
	for c := 1; c < states; c++ {
		v := decode(c)
		var need [3]int64
		for i, d := range ds {
			for k := range need {
				need[k] += int64(v[i]) * d.req[k]
			}
		}
		cost[c] = math.Inf(1)
		for _, t := range types {
			if fitsIn([3]int64{}, need, t.Alloc) {
				cost[c] = min(cost[c], t.NodePrice(t.Price, need[0]))
			}
		}
		if !math.IsInf(cost[c], 1) {
			mixes = append(mixes, c)
		}
	}
	// f[x] is the cheapest cover of the replica vector x.
	f := make([]float64, states)
	for x := 1; x < states; x++ {
		f[x] = math.Inf(1)
		xv := decode(x)
		for _, c := range mixes {
			if c > x {
				break
			}
			cv := decode(c)
			sub, fits := 0, true
			for i := range cv {
				if cv[i] > xv[i] {
					fits = false
					break
				}
				sub += (xv[i] - cv[i]) * radix[i]
			}
			if fits {
				f[x] = min(f[x], cost[c]+f[sub])
			}
		}
	}
	if math.IsInf(f[states-1], 1) {
		return 0, false, fmt.Errorf("shape %s: some pod fits no type", s.Name)
	}
	return f[states-1], true, nil
}
