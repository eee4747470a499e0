package awsfront

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"slices"
	"sort"
	"strconv"
)

// placementGroup is a placement group the front keeps (moto 5.2 has none:
// CreatePlacementGroup and DescribePlacementGroups are not implemented).
type placementGroup struct {
	ID, Name, Strategy string
	Partitions         int
}

type placementGroupItem struct {
	GroupName      string `xml:"groupName"`
	GroupID        string `xml:"groupId"`
	GroupArn       string `xml:"groupArn"`
	State          string `xml:"state"`
	Strategy       string `xml:"strategy"`
	PartitionCount int    `xml:"partitionCount,omitempty"`
}

type describePlacementGroupsResponse struct {
	XMLName   xml.Name             `xml:"DescribePlacementGroupsResponse"`
	Xmlns     string               `xml:"xmlns,attr"`
	RequestID string               `xml:"requestId"`
	Groups    []placementGroupItem `xml:"placementGroupSet>item"`
}

type createPlacementGroupResponse struct {
	XMLName   xml.Name           `xml:"CreatePlacementGroupResponse"`
	Xmlns     string             `xml:"xmlns,attr"`
	RequestID string             `xml:"requestId"`
	Group     placementGroupItem `xml:"placementGroup"`
}

// placementGroupID is a group's ID, derived from its name (stable across
// runs of a scenario).
func placementGroupID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "pg-" + hex.EncodeToString(sum[:])[:17]
}

// AddPlacementGroup makes a placement group (strategy cluster, partition
// or spread; partitions for a partition group) and returns its ID.
func (f *Front) AddPlacementGroup(name, strategy string, partitions int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addPlacementGroupLocked(name, strategy, partitions)
}

func (f *Front) addPlacementGroupLocked(name, strategy string, partitions int) string {
	if f.placement == nil {
		f.placement = map[string]placementGroup{}
	}
	g := placementGroup{ID: placementGroupID(name), Name: name, Strategy: strategy, Partitions: partitions}
	f.placement[name] = g
	return g.ID
}

// RemovePlacementGroup deletes a placement group by name.
func (f *Front) RemovePlacementGroup(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.placement, name)
}

func (f *Front) placementItem(g placementGroup) placementGroupItem {
	return placementGroupItem{GroupName: g.Name, GroupID: g.ID, State: "available", Strategy: g.Strategy, PartitionCount: g.Partitions,
		GroupArn: "arn:aws:ec2:" + f.cfg.Region + ":" + f.cfg.Account + ":placement-group/" + g.Name}
}

// placementGroups answers CreatePlacementGroup, DeletePlacementGroup and
// DescribePlacementGroups as EC2 does: a name or ID asked for that no
// group has is InvalidPlacementGroup.Unknown; the state filter is honoured.
func (f *Front) placementGroups(w http.ResponseWriter, req request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch req.action {
	case "CreatePlacementGroup":
		name := req.form.Get("GroupName")
		if _, ok := f.placement[name]; ok || name == "" {
			writeEC2Error(w, http.StatusBadRequest, "InvalidPlacementGroup.Duplicate", "The placement group '"+name+"' already exists.")
			return
		}
		n, _ := strconv.Atoi(req.form.Get("PartitionCount"))
		f.addPlacementGroupLocked(name, req.form.Get("Strategy"), n)
		writePlacementXML(w, createPlacementGroupResponse{Xmlns: ec2Namespace, RequestID: requestID(), Group: f.placementItem(f.placement[name])})
		return
	case "DeletePlacementGroup":
		name := req.form.Get("GroupName")
		if _, ok := f.placement[name]; !ok {
			writeEC2Error(w, http.StatusBadRequest, "InvalidPlacementGroup.Unknown", "The Placement Group '"+name+"' is unknown.")
			return
		}
		delete(f.placement, name)
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(xml.Header + `<DeletePlacementGroupResponse xmlns="` + ec2Namespace + `"><requestId>` + requestID() + `</requestId><return>true</return></DeletePlacementGroupResponse>`))
		return
	}
	names, ids := listParam(req.form, "GroupName"), listParam(req.form, "GroupId")
	states := filterValues(req.form, "state")
	resp := describePlacementGroupsResponse{Xmlns: ec2Namespace, RequestID: requestID()}
	found := map[string]bool{}
	for _, g := range f.placement {
		if (len(names) > 0 || len(ids) > 0) && !slices.Contains(names, g.Name) && !slices.Contains(ids, g.ID) {
			continue
		}
		found[g.Name], found[g.ID] = true, true
		if len(states) > 0 && !slices.Contains(states, "available") {
			continue
		}
		resp.Groups = append(resp.Groups, f.placementItem(g))
	}
	for _, asked := range append(names, ids...) {
		if !found[asked] {
			writeEC2Error(w, http.StatusBadRequest, "InvalidPlacementGroup.Unknown", "The Placement Group '"+asked+"' is unknown.")
			return
		}
	}
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].GroupName < resp.Groups[j].GroupName })
	writePlacementXML(w, resp)
}

func writePlacementXML(w http.ResponseWriter, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		writeEC2Error(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	writeXML(w, append([]byte(xml.Header), b...))
}
