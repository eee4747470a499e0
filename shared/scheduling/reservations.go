package scheduling

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// Reservation is an EC2 capacity reservation (or Capacity Block) an
// EC2NodeClass selects, with the instances it still takes. Its offering
// (type, zone, capacity type reserved) is priced as already paid, so a
// solve fills it before it buys on-demand or spot; NodeClaims take it one
// instance each, and those beyond Available fall back to the pool's other
// capacity types (or stay pending when the pool allows reserved only).
type Reservation struct {
	ID           string `json:"id"`
	NodeClass    string `json:"nodeClass"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	// Type is default or capacity-block.
	Type      string `json:"type"`
	Available int    `json:"available"`
}

// reservedShare is how much of the on-demand price a reserved offering is
// priced at: the instance is paid for whether it runs or not, so it is
// nearly free, and still ordered by size for consolidation (Karpenter
// divides by ten million too).
const reservedShare = 1e-7

// ReservedPrice is the price a solve gives a reserved offering of a type
// whose on-demand price is onDemand.
func ReservedPrice(onDemand float64) float64 { return onDemand * reservedShare }

// usable reports whether a reservation can take a launch now.
func (in *Input) usableReservations() []Reservation {
	var out []Reservation
	for _, r := range in.Reservations {
		if r.Available <= 0 || (in.Unavailable != nil && in.Unavailable(r.InstanceType, r.Zone, apis.CapacityTypeReserved)) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Reservation) int {
		return cmp.Or(cmp.Compare(a.NodeClass, b.NodeClass), cmp.Compare(a.InstanceType, b.InstanceType),
			cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// indexReservations adds the reserved offerings: one per type and zone
// some usable reservation covers.
func (u *universe) indexReservations(in *Input) {
	c := slices.Index(capacityTypes, apis.CapacityTypeReserved)
	nc := len(capacityTypes)
	u.reservedBy = map[string]uint64{}
	for _, r := range in.usableReservations() {
		t, ok := u.index[r.InstanceType]
		if !ok {
			continue
		}
		z, ok := slices.BinarySearch(u.zones, r.Zone)
		if !ok {
			continue
		}
		slot := z*nc + c
		u.offered[slot].set(t)
		u.price[t*u.slots+slot] = ReservedPrice(u.types[t].OnDemandPrice)
		u.reservedBy[r.NodeClass] |= 1 << uint(slot)
	}
	for z := range u.zones {
		u.reservedSlots |= 1 << uint(z*nc+c)
	}
}

// reservedElsewhere is the reserved slots no reservation of class covers:
// a pool may launch into its own class's reservations only.
func (u *universe) reservedElsewhere(class string) uint64 {
	return u.reservedSlots &^ u.reservedBy[class]
}

// reservationRoom is what each usable reservation still takes, in the
// order claims look for one.
type reservationRoom struct {
	list []Reservation
	left []int
}

func (s *solver) reservationRoom() *reservationRoom {
	r := &reservationRoom{list: s.in.usableReservations()}
	for _, res := range r.list {
		r.left = append(r.left, res.Available)
	}
	return r
}

// take gives the claim one instance of a reservation of its class with
// room, for its types in their order, in one of its zones.
func (r *reservationRoom) take(nc NodeClaim) (Reservation, bool) {
	for _, typ := range nc.InstanceTypes {
		for i, res := range r.list {
			if r.left[i] > 0 && res.NodeClass == nc.NodeClass && res.InstanceType == typ && slices.Contains(nc.Zones, res.Zone) {
				r.left[i]--
				return res, true
			}
		}
	}
	return Reservation{}, false
}

// finalizeReserving finalizes a claim; one whose cheapest offering is
// reserved takes an instance of a reservation, or, when its reservations
// are full, is finalized again without reserved offerings (on-demand or
// spot, as the pool allows).
func (s *solver) finalizeReserving(c *claim, headroom *vec, room *reservationRoom) (NodeClaim, string) {
	var saved vec
	if headroom != nil {
		saved = *headroom
	}
	nc, reason := s.finalize(c, headroom, c.state.mask)
	if reason != "" || nc.CapacityType != apis.CapacityTypeReserved {
		return nc, reason
	}
	if r, ok := room.take(nc); ok {
		return s.reserve(nc, c.pool, r), ""
	}
	if headroom != nil {
		*headroom = saved
	}
	nc, reason = s.finalize(c, headroom, c.state.mask&^s.u.reservedSlots)
	if reason == "" && len(nc.InstanceTypes) == 0 {
		reason = fmt.Sprintf("the capacity reservations of NodePool %s are full, and it allows no other capacity type", c.pool.name)
	}
	return nc, reason
}

// reserve narrows a claim to one reservation: its type, zone and ID.
func (s *solver) reserve(nc NodeClaim, p *pool, r Reservation) NodeClaim {
	nc.InstanceTypes, nc.Zones = []string{r.InstanceType}, []string{r.Zone}
	nc.CapacityType, nc.CapacityTypes = apis.CapacityTypeReserved, []string{apis.CapacityTypeReserved}
	nc.CapacityReservationID, nc.CapacityReservationType = r.ID, r.Type
	if t, ok := s.u.index[r.InstanceType]; ok {
		nc.PricePerHour = ReservedPrice(s.u.types[t].OnDemandPrice) + p.nodeCost
	}
	narrowed := map[string]string{
		apis.LabelInstanceType: r.InstanceType, apis.LabelZone: r.Zone, apis.LabelCapacityType: apis.CapacityTypeReserved,
		apis.LabelCapacityReservationID: r.ID, apis.LabelCapacityReservationType: r.Type,
	}
	reqs := make([]corev1.NodeSelectorRequirement, 0, len(nc.Requirements)+2)
	for _, q := range nc.Requirements {
		if _, ok := narrowed[q.Key]; !ok {
			reqs = append(reqs, q)
		}
	}
	for k, v := range narrowed {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}})
		nc.Labels[k] = v
		if alias, ok := apis.LabelAliases[k]; ok {
			nc.Labels[alias] = v
		}
	}
	slices.SortFunc(reqs, func(a, b corev1.NodeSelectorRequirement) int { return cmp.Compare(a.Key, b.Key) })
	nc.Requirements = reqs
	return nc
}
