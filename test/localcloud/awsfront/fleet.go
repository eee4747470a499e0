package awsfront

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// fleetRequest is the part of a CreateFleet (instant) call the capacity
// model needs, parsed from its Query parameters.
type fleetRequest struct {
	configs      []launchConfig
	total        int
	capacityType string // spot | on-demand
	strategy     string // allocation strategy of that capacity type
	clientToken  string
}

type launchConfig struct {
	spec      ltSpec
	overrides []override
}

type override struct {
	config   int // index into fleetRequest.configs
	params   url.Values
	Type     string
	Subnet   string
	Zone     string
	Priority float64
	hasPrio  bool
}

const ltPrefix = "LaunchTemplateConfigs."

// parseFleetRequest reads CreateFleet's Query parameters.
func parseFleetRequest(form url.Values) (fleetRequest, error) {
	fr := fleetRequest{
		capacityType: form.Get("TargetCapacitySpecification.DefaultTargetCapacityType"),
		clientToken:  form.Get("ClientToken"),
	}
	total, err := strconv.Atoi(form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
	if err != nil || total < 1 {
		return fr, fmt.Errorf("TargetCapacitySpecification.TotalTargetCapacity %q: must be a positive integer", form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
	}
	fr.total = total
	if fr.capacityType == "" {
		fr.capacityType = OnDemand
	}
	if fr.capacityType == Spot {
		fr.strategy = form.Get("SpotOptions.AllocationStrategy")
	} else {
		fr.strategy = form.Get("OnDemandOptions.AllocationStrategy")
	}
	byIndex := map[int]*launchConfig{}
	ovByIndex := map[[2]int]url.Values{}
	for k, v := range form {
		rest, ok := strings.CutPrefix(k, ltPrefix)
		if !ok {
			continue
		}
		ci, field, ok := cutIndex(rest)
		if !ok {
			return fr, fmt.Errorf("parameter %s: malformed", k)
		}
		lc := byIndex[ci]
		if lc == nil {
			lc = &launchConfig{}
			byIndex[ci] = lc
		}
		switch {
		case field == "LaunchTemplateSpecification.LaunchTemplateId":
			lc.spec.ID = v[0]
		case field == "LaunchTemplateSpecification.LaunchTemplateName":
			lc.spec.Name = v[0]
		case field == "LaunchTemplateSpecification.Version":
			lc.spec.Version = v[0]
		case strings.HasPrefix(field, "Overrides."):
			oi, of, ok := cutIndex(strings.TrimPrefix(field, "Overrides."))
			if !ok {
				return fr, fmt.Errorf("parameter %s: malformed", k)
			}
			key := [2]int{ci, oi}
			if ovByIndex[key] == nil {
				ovByIndex[key] = url.Values{}
			}
			ovByIndex[key][of] = v
		}
	}
	fr.configs, err = assembleConfigs(byIndex, ovByIndex)
	return fr, err
}

// assembleConfigs orders launch configs and their overrides by their
// 1-based Query indexes.
func assembleConfigs(byIndex map[int]*launchConfig, ovs map[[2]int]url.Values) ([]launchConfig, error) {
	idx := make([]int, 0, len(byIndex))
	for i := range byIndex {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	pos := map[int]int{}
	out := make([]launchConfig, len(idx))
	for p, i := range idx {
		pos[i] = p
		out[p] = *byIndex[i]
	}
	keys := make([][2]int, 0, len(ovs))
	for k := range ovs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a][0] != keys[b][0] {
			return keys[a][0] < keys[b][0]
		}
		return keys[a][1] < keys[b][1]
	})
	for _, k := range keys {
		p := ovs[k]
		o := override{config: pos[k[0]], params: p, Type: p.Get("InstanceType"), Subnet: p.Get("SubnetId"), Zone: p.Get("AvailabilityZone")}
		if s := p.Get("Priority"); s != "" {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("override %d.%d Priority %q: %w", k[0], k[1], s, err)
			}
			o.Priority, o.hasPrio = v, true
		}
		out[pos[k[0]]].overrides = append(out[pos[k[0]]].overrides, o)
	}
	return out, nil
}

// cutIndex splits "3.Rest" into 3 and "Rest".
func cutIndex(s string) (int, string, bool) {
	num, rest, ok := strings.Cut(s, ".")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return 0, "", false
	}
	return n, rest, true
}

// XML documents of CreateFleet's response.
type createFleetResponse struct {
	XMLName   xml.Name        `xml:"CreateFleetResponse"`
	Xmlns     string          `xml:"xmlns,attr,omitempty"`
	RequestID string          `xml:"requestId"`
	FleetID   string          `xml:"fleetId"`
	Errors    []fleetError    `xml:"errorSet>item"`
	Instances []fleetInstance `xml:"fleetInstanceSet>item"`
}

type ltAndOverrides struct {
	Spec      ltSpec        `xml:"launchTemplateSpecification"`
	Overrides ltOverrideXML `xml:"overrides"`
}

type ltSpec struct {
	ID      string `xml:"launchTemplateId,omitempty"`
	Name    string `xml:"launchTemplateName,omitempty"`
	Version string `xml:"version,omitempty"`
}

type ltOverrideXML struct {
	InstanceType     string `xml:"instanceType,omitempty"`
	SubnetID         string `xml:"subnetId,omitempty"`
	AvailabilityZone string `xml:"availabilityZone,omitempty"`
	Priority         string `xml:"priority,omitempty"`
}

type fleetError struct {
	LT        ltAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle string         `xml:"lifecycle"`
	Code      string         `xml:"errorCode"`
	Message   string         `xml:"errorMessage"`
}

type fleetInstance struct {
	LT           ltAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle    string         `xml:"lifecycle"`
	InstanceIDs  []string       `xml:"instanceIds>item"`
	InstanceType string         `xml:"instanceType"`
}

// createFleet runs an instant fleet against the capacity pools: overrides
// are tried in the order of the allocation strategy; exhausted pools add an
// InsufficientInstanceCapacity error; moto launches from the others, one
// override at a time (it takes only the first override of a request).
func (f *Front) createFleet(w http.ResponseWriter, r *http.Request, req request) {
	fr, err := parseFleetRequest(req.form)
	if err != nil {
		writeEC2Error(w, http.StatusBadRequest, "InvalidParameterValue", err.Error())
		return
	}
	request := fleetFingerprint(req.form)
	if prev, ok := f.cachedFleet(fr.clientToken); ok {
		if prev.request != request {
			// EC2 compares the request a token comes back with to the
			// first one's.
			writeEC2Error(w, http.StatusBadRequest, "IdempotentParameterMismatch",
				"The client token you have provided is associated with a request that has different parameters.")
			return
		}
		writeXML(w, prev.response)
		return
	}
	resp := createFleetResponse{Xmlns: ec2Namespace, RequestID: requestID()}
	remaining := fr.total
	for _, o := range f.orderOverrides(r.Context(), fr) {
		if remaining == 0 {
			break
		}
		if o.Zone != "" && !f.offered(o.Type, o.Zone) {
			// Not offered there (Options.MissingOfferings): EC2 refuses
			// the override and goes on to the next.
			resp.Errors = append(resp.Errors, unsupportedError(fr, o))
			continue
		}
		// A template that targets a capacity reservation launches into it
		// (on-demand instances) while it has room; others draw on the pools.
		as, got, reserved := fr, 0, f.targetOf(fr.configs[o.config].spec)
		var settle func(launched []string)
		if reserved != "" {
			n, code, msg := f.takeReservation(reserved, o, remaining)
			if n == 0 {
				resp.Errors = append(resp.Errors, fleetError{LT: ltOf(fr, o), Lifecycle: fr.capacityType, Code: code, Message: msg})
				continue
			}
			got, as.capacityType = n, OnDemand
			settle = func(launched []string) { f.settleReservation(reserved, n, launched) }
		} else {
			pool := PoolKey{o.Type, o.Zone, fr.capacityType}
			if got = f.take(pool, remaining); got == 0 {
				resp.Errors = append(resp.Errors, iceError(fr, o))
				continue
			}
			settle = func(launched []string) { f.giveBack(pool, got-len(launched)) }
		}
		inst, fleetID, status, body, err := f.launch(r, req.form, as, o, got)
		if err != nil || status != http.StatusOK {
			settle(nil)
			if err != nil {
				writeEC2Error(w, http.StatusInternalServerError, "InternalError", err.Error())
				return
			}
			writeRaw(w, status, body)
			return
		}
		settle(inst.InstanceIDs)
		if got < remaining && reserved == "" {
			// The pool ran out part way: EC2 reports it like an empty one.
			resp.Errors = append(resp.Errors, iceError(fr, o))
		}
		remaining -= len(inst.InstanceIDs)
		if resp.FleetID == "" {
			resp.FleetID = fleetID
		}
		resp.Instances = append(resp.Instances, inst)
	}
	if resp.FleetID == "" {
		resp.FleetID = "fleet-" + strings.ReplaceAll(requestID(), "-", "")[:17]
	}
	b, err := xml.Marshal(resp)
	if err != nil {
		writeEC2Error(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	b = append([]byte(xml.Header), b...)
	f.cacheFleet(fr.clientToken, fleetCall{request: request, response: b})
	f.log.Info("CreateFleet", "capacityType", fr.capacityType, "target", fr.total, "launched", fr.total-remaining, "errors", len(resp.Errors))
	writeXML(w, b)
}

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

func iceError(fr fleetRequest, o override) fleetError {
	zone := o.Zone
	if zone == "" {
		zone = "the Availability Zone you requested"
	}
	return fleetError{
		LT:        ltOf(fr, o),
		Lifecycle: fr.capacityType,
		Code:      "InsufficientInstanceCapacity",
		Message: fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). "+
			"Our system will be working on provisioning additional capacity.", o.Type, zone),
	}
}

// unsupportedError is EC2's answer to an override of a type the zone does
// not offer.
func unsupportedError(fr fleetRequest, o override) fleetError {
	return fleetError{
		LT:        ltOf(fr, o),
		Lifecycle: fr.capacityType,
		Code:      "Unsupported",
		Message: fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s). "+
			"Please retry your request by not specifying an Availability Zone or choosing another one.", o.Type, o.Zone),
	}
}

func ltOf(fr fleetRequest, o override) ltAndOverrides {
	lt := ltAndOverrides{Spec: fr.configs[o.config].spec, Overrides: ltOverrideXML{InstanceType: o.Type, SubnetID: o.Subnet, AvailabilityZone: o.Zone}}
	if o.hasPrio {
		lt.Overrides.Priority = strconv.FormatFloat(o.Priority, 'f', -1, 64)
	}
	return lt
}

// launch asks moto for n instances of one override.
func (f *Front) launch(r *http.Request, form url.Values, fr fleetRequest, o override, n int) (fleetInstance, string, int, []byte, error) {
	sub := url.Values{}
	for k, v := range form {
		if strings.HasPrefix(k, ltPrefix) || strings.HasPrefix(k, "TargetCapacitySpecification.") || k == "ClientToken" {
			continue
		}
		sub[k] = v
	}
	spec := fr.configs[o.config].spec
	setIf(sub, ltPrefix+"1.LaunchTemplateSpecification.LaunchTemplateId", spec.ID)
	setIf(sub, ltPrefix+"1.LaunchTemplateSpecification.LaunchTemplateName", spec.Name)
	setIf(sub, ltPrefix+"1.LaunchTemplateSpecification.Version", spec.Version)
	for k, v := range o.params {
		sub[ltPrefix+"1.Overrides.1."+k] = v
	}
	sub.Set("TargetCapacitySpecification.TotalTargetCapacity", strconv.Itoa(n))
	sub.Set("TargetCapacitySpecification.DefaultTargetCapacityType", fr.capacityType)
	if fr.capacityType == Spot {
		sub.Set("TargetCapacitySpecification.SpotTargetCapacity", strconv.Itoa(n))
	} else {
		sub.Set("TargetCapacitySpecification.OnDemandTargetCapacity", strconv.Itoa(n))
	}
	status, body, err := f.motoCall(r.Context(), r, sub)
	if err != nil || status != http.StatusOK {
		return fleetInstance{}, "", status, body, err
	}
	var mr createFleetResponse
	if err := xml.Unmarshal(body, &mr); err != nil {
		return fleetInstance{}, "", 0, nil, fmt.Errorf("moto CreateFleet response: %w", err)
	}
	inst := fleetInstance{LT: ltOf(fr, o), Lifecycle: fr.capacityType, InstanceType: o.Type}
	for _, mi := range mr.Instances {
		inst.InstanceIDs = append(inst.InstanceIDs, mi.InstanceIDs...)
	}
	return inst, mr.FleetID, status, body, nil
}

func setIf(v url.Values, k, s string) {
	if s != "" {
		v.Set(k, s)
	}
}

// orderOverrides sorts the overrides as the allocation strategy would try
// them: by priority for the prioritized strategies, else by price (spot
// price for spot, on-demand price for on-demand); ties keep request order.
// Overrides without a zone get it from their subnet.
func (f *Front) orderOverrides(ctx context.Context, fr fleetRequest) []override {
	var all []override
	for _, c := range fr.configs {
		all = append(all, c.overrides...)
	}
	for i := range all {
		if all[i].Zone == "" && all[i].Subnet != "" {
			all[i].Zone = f.subnetZone(ctx, all[i].Subnet)
		}
	}
	byPriority := strings.Contains(fr.strategy, "prioritized") || fr.strategy == "priority"
	price := func(o override) float64 {
		p, ok := f.price(o.Type, o.Zone, fr.capacityType)
		if !ok {
			return 1e9
		}
		return p
	}
	sort.SliceStable(all, func(a, b int) bool {
		if byPriority {
			return all[a].Priority < all[b].Priority
		}
		return price(all[a]) < price(all[b])
	})
	return all
}

// fleetCall is a CreateFleet a ClientToken made: its request (without the
// token) and the answer.
type fleetCall struct {
	request  string
	response []byte
}

// fleetFingerprint is a CreateFleet request as EC2 compares it when its
// ClientToken comes again: every parameter but the token (Encode sorts
// them).
func fleetFingerprint(form url.Values) string {
	c := url.Values{}
	for k, v := range form {
		if k != "ClientToken" {
			c[k] = v
		}
	}
	return c.Encode()
}

func (f *Front) cachedFleet(token string) (fleetCall, bool) {
	if token == "" {
		return fleetCall{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.tokens[token]
	return c, ok
}

func (f *Front) cacheFleet(token string, c fleetCall) {
	if token == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens[token] = c
}

func writeXML(w http.ResponseWriter, b []byte) {
	writeRaw(w, http.StatusOK, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
