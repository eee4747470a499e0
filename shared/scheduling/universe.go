package scheduling

import (
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/requirements"
)

// capacityTypes are the capacity types offerings can have, in the order
// prices are stored (reserved offerings come from Input.Reservations).
var capacityTypes = []string{apis.CapacityTypeOnDemand, apis.CapacityTypeSpot, apis.CapacityTypeReserved}

// universe indexes the instance types of a solve: their labels as bitsets
// per (key, value), and their offerings as bitsets per (zone, capacity type)
// with prices, so requirement and offering checks are bitset operations.
type universe struct {
	types  []*catalog.InstanceType
	index  map[string]int // by name
	labels []map[string]string
	n      int
	all    bitset
	exotic bitset

	keys map[string]*keyIndex

	zones []string
	// offered[z*len(capacityTypes)+c] is the types with an available
	// offering in zone z of capacity type c.
	offered []bitset
	// price[t*slots+z*len(capacityTypes)+c] is that offering's price (+Inf
	// when not offered or unavailable).
	price []float64
	slots int
	// reservedSlots are every zone's reserved slot; reservedBy the ones
	// each EC2NodeClass's reservations cover.
	reservedSlots uint64
	reservedBy    map[string]uint64

	// vols resolves pods' volumes (nil: the input has none); podVols
	// caches it per pod.
	vols    *volumeIndex
	podVols map[*corev1.Pod]podVolumes

	// nodeLabels and nodeAliased are each existing node's labels as a
	// solve reads them and the node with both names of aliased labels
	// (nodes.go): every plan a solve compares builds its nodes alike, so
	// they are built once.
	nodeLabels  map[*corev1.Node]map[string]string
	nodeAliased map[*corev1.Node]*corev1.Node

	reqBits   map[string]bitset
	maskBits  map[uint64]bitset
	maskPrice map[uint64][]float64
	maskOrder map[uint64][]int
}

// keyIndex is one label key's values across types.
type keyIndex struct {
	values []string // sorted
	sets   []bitset // types with each value
	absent bitset   // types without the label
}

func newUniverse(in *Input) *universe {
	u := &universe{
		types: slices.Clone(in.InstanceTypes), keys: map[string]*keyIndex{},
		reqBits: map[string]bitset{}, maskBits: map[uint64]bitset{}, maskPrice: map[uint64][]float64{}, maskOrder: map[uint64][]int{},
		nodeLabels: map[*corev1.Node]map[string]string{}, nodeAliased: map[*corev1.Node]*corev1.Node{},
	}
	sort.Slice(u.types, func(i, j int) bool { return u.types[i].Name < u.types[j].Name })
	u.types = slices.CompactFunc(u.types, func(a, b *catalog.InstanceType) bool { return a.Name == b.Name })
	u.n = len(u.types)
	u.all, u.exotic = newBitset(u.n), newBitset(u.n)
	u.zones = slices.Clone(in.Zones)
	sort.Strings(u.zones)
	u.zones = slices.Compact(u.zones)
	u.labels = make([]map[string]string, u.n)
	u.index = make(map[string]int, u.n)
	for i, it := range u.types {
		u.index[it.Name] = i
		u.all.set(i)
		if it.Exotic() {
			u.exotic.set(i)
		}
		u.labels[i] = it.Labels()
	}
	u.indexLabels()
	u.indexOfferings(in)
	u.vols = newVolumeIndex(in.Volumes)
	return u
}

// volumesOf is what p's volumes require of its node (cached: every solve of
// the portfolio asks).
func (u *universe) volumesOf(p *corev1.Pod) podVolumes {
	if u.vols == nil || len(p.Spec.Volumes) == 0 {
		return podVolumes{}
	}
	if v, ok := u.podVols[p]; ok {
		return v
	}
	if u.podVols == nil {
		u.podVols = map[*corev1.Pod]podVolumes{}
	}
	v := u.vols.forPod(p)
	u.podVols[p] = v
	return v
}

func (u *universe) indexLabels() {
	valuesByKey := map[string]map[string]bool{}
	for _, l := range u.labels {
		for k, v := range l {
			if valuesByKey[k] == nil {
				valuesByKey[k] = map[string]bool{}
			}
			valuesByKey[k][v] = true
		}
	}
	for k, vs := range valuesByKey {
		ki := &keyIndex{absent: u.all.clone()}
		for v := range vs {
			ki.values = append(ki.values, v)
		}
		sort.Strings(ki.values)
		ki.sets = make([]bitset, len(ki.values))
		for i := range ki.sets {
			ki.sets[i] = newBitset(u.n)
		}
		for t, l := range u.labels {
			if v, ok := l[k]; ok {
				i, _ := slices.BinarySearch(ki.values, v)
				ki.sets[i].set(t)
				ki.absent[t>>6] &^= 1 << (uint(t) & 63)
			}
		}
		u.keys[k] = ki
	}
}

func (u *universe) indexOfferings(in *Input) {
	nc := len(capacityTypes)
	u.slots = len(u.zones) * nc
	u.offered = make([]bitset, u.slots)
	for i := range u.offered {
		u.offered[i] = newBitset(u.n)
	}
	u.price = make([]float64, u.n*u.slots)
	for i := range u.price {
		u.price[i] = math.Inf(1)
	}
	for t, it := range u.types {
		for _, o := range it.Offerings(u.zones, in.Spot) {
			if !o.Available || (in.Unavailable != nil && in.Unavailable(it.Name, o.Zone, o.CapacityType)) {
				continue
			}
			z, _ := slices.BinarySearch(u.zones, o.Zone)
			c := slices.Index(capacityTypes, o.CapacityType)
			if c < 0 {
				continue
			}
			u.offered[z*nc+c].set(t)
			u.price[t*u.slots+z*nc+c] = o.Price
		}
	}
	u.indexReservations(in)
}

// isTypeKey says whether instance types carry the label key (so requirements
// on it select types). The operating system and Windows build are the
// image's, not the type's: a pool's EC2NodeClass decides them
// (imageRequirements).
func (u *universe) isTypeKey(key string) bool {
	_, ok := u.keys[key]
	return ok && key != apis.LabelZone && key != apis.LabelCapacityType && key != apis.LabelOS && key != apis.LabelWindowsBuild
}

// typeBits is the types whose label satisfies req (req.Key a type key).
func (u *universe) typeBits(req requirements.Requirement) bitset {
	cacheKey := req.Key + "\x00" + req.String()
	if b, ok := u.reqBits[cacheKey]; ok {
		return b
	}
	ki := u.keys[req.Key]
	b := newBitset(u.n)
	if req.AllowsAbsent() {
		b.or(ki.absent)
	}
	for i, v := range ki.values {
		if req.Has(v) {
			b.or(ki.sets[i])
		}
	}
	u.reqBits[cacheKey] = b
	return b
}

// offeringMask is the (zone, capacity type) slots reqs allow, as a bitmask.
func (u *universe) offeringMask(reqs requirements.Requirements) uint64 {
	zr, hasZ := reqs.Get(apis.LabelZone)
	cr, hasC := reqs.Get(apis.LabelCapacityType)
	var m uint64
	for z, zone := range u.zones {
		if hasZ && !zr.Has(zone) {
			continue
		}
		for c, ct := range capacityTypes {
			if hasC && !cr.Has(ct) {
				continue
			}
			m |= 1 << uint(z*len(capacityTypes)+c)
		}
	}
	return m
}

// offeredIn is the types with an available offering in one of mask's slots.
func (u *universe) offeredIn(mask uint64) bitset {
	if b, ok := u.maskBits[mask]; ok {
		return b
	}
	b := newBitset(u.n)
	for s := 0; s < u.slots; s++ {
		if mask&(1<<uint(s)) != 0 {
			b.or(u.offered[s])
		}
	}
	u.maskBits[mask] = b
	return b
}

// prices is each type's cheapest available offering within mask (+Inf none).
func (u *universe) prices(mask uint64) []float64 {
	if p, ok := u.maskPrice[mask]; ok {
		return p
	}
	p := make([]float64, u.n)
	for t := range p {
		best := math.Inf(1)
		for s := 0; s < u.slots; s++ {
			if mask&(1<<uint(s)) != 0 {
				best = min(best, u.price[t*u.slots+s])
			}
		}
		p[t] = best
	}
	u.maskPrice[mask] = p
	return p
}

// cheapestOffering returns the zone and capacity type of type t's cheapest
// offering within mask (zone order, on-demand first on ties).
func (u *universe) cheapestOffering(t int, mask uint64) (zone, capacityType string, price float64) {
	price = math.Inf(1)
	for s := 0; s < u.slots; s++ {
		if mask&(1<<uint(s)) == 0 {
			continue
		}
		if p := u.price[t*u.slots+s]; p < price {
			price, zone, capacityType = p, u.zones[s/len(capacityTypes)], capacityTypes[s%len(capacityTypes)]
		}
	}
	return zone, capacityType, price
}

// typeRequirementBits narrows candidates to the types that satisfy every
// type-level requirement of reqs.
func (u *universe) typeRequirementBits(reqs requirements.Requirements, candidates bitset) bitset {
	b := candidates.clone()
	for _, r := range reqs {
		if u.isTypeKey(r.Key) {
			b.and(u.typeBits(r))
		} else if !u.isOfferingKey(r.Key) && strings.HasPrefix(r.Key, apis.AWSGroup+"/instance-") && !r.AllowsAbsent() {
			// An instance label no type carries (e.g. a GPU label when the
			// catalog has none): nothing satisfies it.
			return newBitset(u.n)
		}
	}
	return b
}

func (u *universe) isOfferingKey(key string) bool {
	return key == apis.LabelZone || key == apis.LabelCapacityType
}

// split separates requirements on instance-type labels from the others
// (zone, capacity type and node labels).
func (u *universe) split(r requirements.Requirements) (typeReqs, other requirements.Requirements) {
	for _, req := range r {
		if u.isTypeKey(req.Key) {
			typeReqs = append(typeReqs, req)
		} else {
			other = append(other, req)
		}
	}
	return typeReqs, other
}

// orderByPrice is every type with an offering in mask, by its cheapest such
// offering then name; computed once per mask.
func (u *universe) orderByPrice(mask uint64) []int {
	if o, ok := u.maskOrder[mask]; ok {
		return o
	}
	prices := u.prices(mask)
	order := make([]int, 0, u.n)
	for t := range prices {
		if !math.IsInf(prices[t], 1) {
			order = append(order, t)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case prices[a] < prices[b]:
			return -1
		case prices[a] > prices[b]:
			return 1
		}
		return 0
	})
	u.maskOrder[mask] = order
	return order
}
