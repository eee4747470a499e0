package awsfront

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Reservation is a capacity reservation the front emulates (moto has
// none): an On-Demand Capacity Reservation or a Capacity Block for ML of
// Count instances of one type in one zone, active until End (zero: no end).
type Reservation struct {
	ID           string
	InstanceType string
	Zone         string
	Count        int
	// Type is default or capacity-block.
	Type string
	End  time.Time
	Tags map[string]string
}

// Reservation types (EC2's ReservationType).
const (
	ReservationDefault       = "default"
	ReservationCapacityBlock = "capacity-block"
)

// reservationBook is the emulated reservations (by ID), the reservation
// each launch template targets (by name), and the places fleets took and
// have not settled yet; the Front's mu guards it.
type reservationBook struct {
	byID    map[string]*reservation
	targets map[string]string
	pending map[string]int
}

func newReservationBook() reservationBook {
	return reservationBook{byID: map[string]*reservation{}, targets: map[string]string{}, pending: map[string]int{}}
}

// reservation is a reservation and the instances launched into it.
type reservation struct {
	Reservation
	instances map[string]bool
}

// AddReservation makes the account hold r: DescribeCapacityReservations
// lists it, and a fleet whose launch template targets it launches into it
// while it has room (ReservationCapacityExceeded once it has none) and
// until its end.
func (f *Front) AddReservation(r Reservation) {
	if r.Type == "" {
		r.Type = ReservationDefault
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rsv.byID[r.ID] = &reservation{Reservation: r, instances: map[string]bool{}}
}

// ReservationUsed is how many instances run in the reservation.
func (f *Front) ReservationUsed(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.rsv.byID[id]; ok {
		return len(r.instances)
	}
	return 0
}

// state is the reservation's EC2 state at now.
func (r *reservation) state(now time.Time) string {
	if !r.End.IsZero() && !now.Before(r.End) {
		return "expired"
	}
	return "active"
}

// rememberTemplateTarget records the reservation a CreateLaunchTemplate
// targets, by the template's name, for the fleets that launch with it.
func (f *Front) rememberTemplateTarget(form url.Values) {
	id := form.Get("LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId")
	name := form.Get("LaunchTemplateName")
	if id == "" || name == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rsv.targets[name] = id
}

// targetOf is the reservation the launch template targets ("": none).
func (f *Front) targetOf(spec ltSpec) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rsv.targets[spec.Name]
}

// takeReservation takes up to n instances of the reservation for an
// override; the error code says why none (ReservationCapacityExceeded, or
// InvalidCapacityReservationId...).
func (f *Front) takeReservation(id string, o override, n int) (int, string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.rsv.byID[id]
	switch {
	case !ok:
		return 0, "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)
	case r.state(f.cfg.Now()) != "active":
		return 0, "InvalidCapacityReservationId.Malformed", fmt.Sprintf("The capacity reservation '%s' is not active", id)
	case r.InstanceType != o.Type || (o.Zone != "" && r.Zone != o.Zone):
		return 0, "InvalidParameterCombination", fmt.Sprintf("The capacity reservation '%s' holds %s in %s, not %s in %s", id, r.InstanceType, r.Zone, o.Type, o.Zone)
	}
	got := min(n, r.Count-len(r.instances)-f.rsv.pending[id])
	if got <= 0 {
		return 0, "ReservationCapacityExceeded", fmt.Sprintf("There is no remaining capacity in capacity reservation '%s'", id)
	}
	f.rsv.pending[id] += got
	return got, "", ""
}

// settleReservation records the instances launched into the reservation
// and frees what was taken beyond them.
func (f *Front) settleReservation(id string, taken int, ids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rsv.pending[id] -= taken
	if r, ok := f.rsv.byID[id]; ok {
		for _, i := range ids {
			r.instances[i] = true
		}
	}
}

// releaseReservations frees the reservations' places of terminated
// instances.
func (f *Front) releaseReservations(ids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rsv.byID {
		for _, id := range ids {
			delete(r.instances, id)
		}
	}
}

type describeReservationsResponse struct {
	XMLName      xml.Name         `xml:"DescribeCapacityReservationsResponse"`
	Xmlns        string           `xml:"xmlns,attr"`
	RequestID    string           `xml:"requestId"`
	Reservations []reservationXML `xml:"capacityReservationSet>item"`
}

type reservationXML struct {
	ID            string   `xml:"capacityReservationId"`
	OwnerID       string   `xml:"ownerId"`
	InstanceType  string   `xml:"instanceType"`
	Zone          string   `xml:"availabilityZone"`
	Total         int      `xml:"totalInstanceCount"`
	Available     int      `xml:"availableInstanceCount"`
	State         string   `xml:"state"`
	MatchCriteria string   `xml:"instanceMatchCriteria"`
	Type          string   `xml:"reservationType"`
	End           string   `xml:"endDate,omitempty"`
	Tags          []tagXML `xml:"tagSet>item"`
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

// describeCapacityReservations answers from the emulated reservations, by
// ID and by the filters Nodewright sends (state, owner-id, tag:K, tag-key,
// instance-match-criteria).
func (f *Front) describeCapacityReservations(w http.ResponseWriter, req request) {
	ids := listParam(req.form, "CapacityReservationId")
	now := f.cfg.Now()
	f.mu.Lock()
	var out []reservationXML
	for _, r := range f.rsv.byID {
		x := reservationXML{ID: r.ID, OwnerID: f.cfg.Account, InstanceType: r.InstanceType, Zone: r.Zone, Total: r.Count,
			Available: max(r.Count-len(r.instances), 0), State: r.state(now), MatchCriteria: "targeted", Type: r.Type}
		if !r.End.IsZero() {
			x.End = r.End.UTC().Format(time.RFC3339)
		}
		for _, k := range sortedKeys(r.Tags) {
			x.Tags = append(x.Tags, tagXML{k, r.Tags[k]})
		}
		if (len(ids) == 0 || slices.Contains(ids, r.ID)) && reservationMatches(req.form, x, r.Tags) {
			out = append(out, x)
		}
	}
	f.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	b, err := xml.Marshal(describeReservationsResponse{Xmlns: ec2Namespace, RequestID: requestID(), Reservations: out})
	if err != nil {
		writeEC2Error(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	writeXML(w, append([]byte(xml.Header), b...))
}

// reservationMatches applies the request's filters to one reservation.
func reservationMatches(form url.Values, x reservationXML, tags map[string]string) bool {
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		names, ok := form[p+".Name"]
		if !ok || len(names) == 0 {
			return true
		}
		values := listParam(form, p+".Value")
		var have []string
		switch name := names[0]; {
		case name == "state":
			have = []string{x.State}
		case name == "owner-id":
			have = []string{x.OwnerID}
		case name == "instance-match-criteria":
			have = []string{x.MatchCriteria}
		case name == "instance-type":
			have = []string{x.InstanceType}
		case name == "tag-key":
			have = sortedKeys(tags)
		case strings.HasPrefix(name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(name, "tag:")]; ok {
				have = []string{v}
			}
		default:
			continue
		}
		if !slices.ContainsFunc(have, func(h string) bool { return slices.Contains(values, h) }) {
			return false
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
