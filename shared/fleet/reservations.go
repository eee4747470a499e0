package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// BlockReclaimLead is how long before a Capacity Block's end its nodes are
// drained and terminated: EC2 starts reclaiming a block's instances 30
// minutes before its end, and Karpenter takes the block as expiring 10
// minutes before that, 40 minutes ahead of the end, as EC2's own
// interruption notice does.
const BlockReclaimLead = 40 * time.Minute

// Reservation is one EC2 capacity reservation (an On-Demand Capacity
// Reservation or a Capacity Block for ML) an EC2NodeClass selects.
type Reservation struct {
	ID           string `json:"id"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	OwnerID      string `json:"ownerID,omitempty"`
	// Type is default or capacity-block (apis.CapacityReservationType*).
	Type string `json:"type"`
	// InstanceMatchCriteria is open or targeted.
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
	// Available is how many more instances it takes, as EC2 last said.
	Available int `json:"available"`
	// End is when it ends (zero: it does not).
	End time.Time `json:"end,omitempty"`
	// Expiring is true for a Capacity Block within BlockReclaimLead of its
	// end: no launch goes into it, and its nodes are drained.
	Expiring bool `json:"expiring,omitempty"`
	// Ended is true for a reservation the terms select that is no longer
	// active (expired, cancelled): it takes no launch, and its nodes have
	// not drifted (EC2 runs them on-demand now).
	Ended bool `json:"ended,omitempty"`
}

// IsBlock reports whether the reservation is a Capacity Block for ML.
func (r Reservation) IsBlock() bool { return r.Type == apis.CapacityReservationTypeCapacityBlock }

// EndingAt reports whether the reservation is a Capacity Block within
// BlockReclaimLead of its end at now (Expiring is the same at the
// resolution's time; a resolution is kept for minutes).
func (r Reservation) EndingAt(now time.Time) bool {
	if r.Ended {
		return false
	}
	return r.Expiring || (r.IsBlock() && !r.End.IsZero() && !now.Before(r.End.Add(-BlockReclaimLead)))
}

// reservationQueries is one DescribeCapacityReservations per term that
// selects by tags, owner or match criteria, and one for the terms that name
// IDs. Unlike Karpenter they ask for every state: a reservation that ended
// is kept (Ended), so that its nodes are told from those whose reservation
// the class no longer selects (CapacityReservationDrift).
func reservationQueries(terms []apis.CapacityReservationSelectorTerm) []*ec2.DescribeCapacityReservationsInput {
	var ids []string
	var out []*ec2.DescribeCapacityReservationsInput
	for _, t := range terms {
		if t.ID != "" {
			ids = append(ids, t.ID)
		}
		if len(t.Tags) == 0 && t.InstanceMatchCriteria == "" && t.OwnerID == "" {
			continue
		}
		var filters []ec2types.Filter
		if t.OwnerID != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{t.OwnerID}})
		}
		filters = append(filters, tagFilters(t.Tags)...)
		if t.InstanceMatchCriteria != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{t.InstanceMatchCriteria}})
		}
		out = append(out, &ec2.DescribeCapacityReservationsInput{Filters: filters})
	}
	if len(ids) > 0 {
		slices.Sort(ids)
		ids = slices.Compact(ids)
		out = append([]*ec2.DescribeCapacityReservationsInput{{CapacityReservationIds: ids}}, out...)
	}
	return out
}

// reservations are the reservations the terms select, sorted by ID.
func (l *Launcher) reservations(ctx context.Context, terms []apis.CapacityReservationSelectorTerm) ([]Reservation, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	now := l.cfg.Now()
	seen := map[string]Reservation{}
	for _, in := range reservationQueries(terms) {
		pages := ec2.NewDescribeCapacityReservationsPaginator(l.cfg.EC2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describe capacity reservations: %w", err)
			}
			for _, cr := range out.CapacityReservations {
				r, ok := reservationOf(cr, now)
				if ok {
					seen[r.ID] = r
				}
			}
		}
	}
	out := make([]Reservation, 0, len(seen))
	for _, r := range seen {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Reservation) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// reservationOf reads one reservation EC2 described; ok is false for one
// of a kind Nodewright does not know. One that is not active (nor pending,
// nor being created) has Ended.
func reservationOf(cr ec2types.CapacityReservation, now time.Time) (Reservation, bool) {
	switch cr.InstanceMatchCriteria {
	case "", ec2types.InstanceMatchCriteriaOpen, ec2types.InstanceMatchCriteriaTargeted:
	default:
		return Reservation{}, false
	}
	r := Reservation{
		ID: aws.ToString(cr.CapacityReservationId), InstanceType: aws.ToString(cr.InstanceType), Zone: aws.ToString(cr.AvailabilityZone),
		OwnerID: aws.ToString(cr.OwnerId), InstanceMatchCriteria: string(cr.InstanceMatchCriteria),
		Available: int(aws.ToInt32(cr.AvailableInstanceCount)), Type: apis.CapacityReservationTypeDefault,
	}
	switch cr.ReservationType {
	case "", ec2types.CapacityReservationTypeDefault:
	case ec2types.CapacityReservationTypeCapacityBlock:
		r.Type = apis.CapacityReservationTypeCapacityBlock
	default:
		return Reservation{}, false
	}
	if cr.EndDate != nil {
		r.End = *cr.EndDate
	}
	if r.ID == "" || r.InstanceType == "" || r.Zone == "" {
		return Reservation{}, false
	}
	switch cr.State {
	case "", ec2types.CapacityReservationStateActive:
	case ec2types.CapacityReservationStatePending, ec2types.CapacityReservationStateScheduled:
		return Reservation{}, false // not begun: neither launched into nor ended
	default:
		r.Ended = true
	}
	r.Expiring = r.EndingAt(now)
	return r, true
}

// Reservation returns the class's reservation of that ID.
func (nc *NodeClass) Reservation(id string) (Reservation, bool) {
	for _, r := range nc.Reservations {
		if r.ID == id {
			return r, true
		}
	}
	return Reservation{}, false
}

// reservationSpec is what a launch template targeting a reservation says:
// launch into this reservation only, and for a Capacity Block, with the
// capacity-block market type.
func reservationSpec(data *ec2types.RequestLaunchTemplateData, r *Reservation) {
	if r == nil {
		return
	}
	data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
		CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
		CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(r.ID)},
	}
	if r.IsBlock() {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
	}
}

// claimReservation is the reservation a reserved claim launches into: one
// the class still selects, of the claim's type and zone, and not a block
// about to end. When it is not, the launch fails as EC2 fails one into a
// full reservation, so that the caller marks the offering unavailable and
// solves again (on-demand or spot, as the pool allows).
func claimReservation(nc *NodeClass, claim scheduling.NodeClaim, now time.Time) (*Reservation, error) {
	id := claim.CapacityReservationID
	if id == "" {
		return nil, nil
	}
	refuse := func(why string) error {
		typ, zone := "", ""
		if len(claim.InstanceTypes) > 0 {
			typ = claim.InstanceTypes[0]
		}
		if len(claim.Zones) > 0 {
			zone = claim.Zones[0]
		}
		fe := FleetError{InstanceType: typ, Zone: zone, CapacityType: apis.CapacityTypeReserved, Code: CodeReservationCapacityExceeded,
			Message: fmt.Sprintf("capacity reservation %s %s", id, why)}
		return &LaunchError{Unavailable: unavailableOf([]FleetError{fe}), Errors: []FleetError{fe}}
	}
	r, ok := nc.Reservation(id)
	switch {
	case !ok:
		return nil, refuse("is not one EC2NodeClass " + nc.Name + " selects (any more)")
	case r.Ended:
		return nil, refuse("has ended")
	case r.EndingAt(now):
		return nil, refuse("is a Capacity Block that ends at " + r.End.UTC().Format(time.RFC3339))
	case !slices.Contains(claim.InstanceTypes, r.InstanceType) || !slices.Contains(claim.Zones, r.Zone):
		return nil, refuse(fmt.Sprintf("holds %s in %s, not the claim's %v in %v", r.InstanceType, r.Zone, claim.InstanceTypes, claim.Zones))
	}
	return &r, nil
}

// launchedIntoReservation reports whether an instance was launched into a
// capacity reservation it targeted (reservations only), as a reserved
// launch does, rather than matched an open one by chance.
func launchedIntoReservation(i ec2types.Instance) bool {
	return aws.ToString(i.CapacityReservationId) != "" && i.CapacityReservationSpecification != nil &&
		i.CapacityReservationSpecification.CapacityReservationPreference == ec2types.CapacityReservationPreferenceCapacityReservationsOnly
}
