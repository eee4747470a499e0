package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/smithy-go"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/state"
)

// Redrive recovers launches an invocation left behind: a record still
// launching after Options.RedriveAfter was written by an invocation that
// died during or after CreateFleet. Its fleet is called again with the
// same ClientToken, which EC2 answers with the first call's instances:
// they are adopted, so nothing leaks and nothing launches twice. A fleet
// that launched nothing removes the records (a retry takes new names).
//
// A re-drive that fails otherwise (the EC2NodeClass is gone, no subnet or
// AMI is left, IdempotentParameterMismatch) looks for the first call's
// instances by their NodeClaim tag: they are adopted when the records can
// still be completed, else terminated; the records are removed when the
// failure is permanent or the launch is older than the registration
// timeout, so no record launching without an instance outlives it.
//
// records are the cluster's records, stale the phantoms among them (see
// Phantom) when the caller keeps them apart. It returns the records it
// recovered and those it removed.
func (l *Launcher) Redrive(ctx context.Context, records, stale []*state.NodeClaim, classList []*apis.EC2NodeClass) (recovered []string, removed map[string]bool, err error) {
	removed = map[string]bool{}
	if err := l.check(); err != nil {
		return nil, removed, err
	}
	now := l.Now()
	all := append(append([]*state.NodeClaim(nil), records...), stale...)
	groups := map[string][]*state.NodeClaim{}
	for _, rec := range all {
		if rec.Group == "" {
			rec.Group = rec.Name
		}
		groups[rec.Group] = append(groups[rec.Group], rec)
	}
	classes := map[string]*apis.EC2NodeClass{}
	for _, c := range classList {
		classes[c.Name] = c
	}
	tokens := make([]string, 0, len(groups))
	for t, members := range groups {
		for _, m := range members {
			if m.Phase == state.Launching && now.Sub(m.CreatedAt) >= l.RedriveAfter {
				tokens = append(tokens, t)
				break
			}
		}
	}
	sort.Strings(tokens)
	tagged := &taggedInstances{list: l.Fleet.Instances}
	for _, token := range tokens {
		members := groups[token]
		sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
		class := classes[members[0].NodeClass]
		var insts []*fleet.Instance
		var err error
		var plan *fleet.Plan
		if class == nil {
			err = fmt.Errorf("EC2NodeClass %s is not configured: %w", members[0].NodeClass, errPermanent)
		} else if plan, err = l.storedPlan(ctx, members, class); err == nil && remnant(members, plan) {
			// Records of the group are gone and none has an instance: the
			// first call failed and an invocation died removing them. A
			// re-drive would launch the whole group again for what is left
			// of it; adopt what the first call may have launched instead,
			// else remove the rest.
			found, lerr := tagged.of(ctx, members)
			if lerr != nil {
				l.Log.Warn("re-drive a launch: look for its instances", "token", token, "error", lerr)
				continue
			}
			if len(found) == 0 {
				l.giveUp(ctx, members, nil, fmt.Errorf("%d of the group's %d records were removed after a failed launch", plan.Count-len(members), plan.Count), removed)
				continue
			}
			for _, in := range found {
				in.PricePerHour = l.priceOf(in.InstanceType, in.Zone, in.CapacityType)
			}
			insts = found
		} else if err == nil {
			insts, err = l.createFleet(ctx, plan)
		}
		var le *fleet.LaunchError
		if err != nil && !errors.As(err, &le) {
			// Not an answer of the fleet: find the first call's instances.
			found, lerr := tagged.of(ctx, members)
			if lerr != nil {
				l.Log.Warn("re-drive a launch: look for its instances", "token", token, "error", lerr)
				continue
			}
			old := now.Sub(members[0].CreatedAt) > l.Timeout
			switch {
			case len(found) > 0 && class != nil && !old:
				l.Log.Warn("re-drive failed: adopting the instances tagged with the launch", "token", token, "instances", len(found), "error", err)
				for _, in := range found {
					in.PricePerHour = l.priceOf(in.InstanceType, in.Zone, in.CapacityType)
				}
				insts, err = found, nil
			case len(found) > 0 || !transient(err) || old:
				l.giveUp(ctx, members, found, err, removed)
				continue
			default:
				l.Log.Warn("re-drive a launch", "token", token, "error", err)
				continue // transient: the next round tries again
			}
		}
		taken := map[string]bool{}
		for _, m := range members {
			if m.InstanceID != "" {
				taken[m.InstanceID] = true
			}
		}
		var free []*fleet.Instance
		for _, in := range insts {
			if !taken[in.InstanceID] {
				free = append(free, in)
			}
		}
		for _, m := range members {
			if m.Phase != state.Launching {
				continue
			}
			if len(free) == 0 {
				if derr := l.Store.DeleteNodeClaim(ctx, m); derr == nil {
					removed[m.Name] = true
				}
				l.Log.Info("re-driven launch launched nothing for this nodeclaim: record removed", "nodeClaim", m.Name, "error", fmt.Sprint(err))
				continue
			}
			in := *free[0]
			free = free[1:]
			in.NodeClaim = m.Name
			if aerr := l.adopt(ctx, m, &in, class); aerr == nil {
				recovered = append(recovered, m.Name)
				l.Log.Info("launch recovered: instance adopted", "nodeClaim", m.Name, "instance", in.InstanceID)
			}
		}
	}
	return recovered, removed, nil
}

// remnant reports whether a group's records are fewer than its fleet asks
// for and none has an instance: what a failed launch leaves when the
// invocation removing its records dies midway.
func remnant(members []*state.NodeClaim, plan *fleet.Plan) bool {
	if len(members) >= plan.Count {
		return false
	}
	for _, m := range members {
		if m.InstanceID != "" || m.Phase != state.Launching {
			return false
		}
	}
	return true
}

// storedPlan is the fleet request the launch stored in its records; a
// record written before requests were stored is planned again under its
// old ClientToken (its group's name).
func (l *Launcher) storedPlan(ctx context.Context, members []*state.NodeClaim, class *apis.EC2NodeClass) (*fleet.Plan, error) {
	first := members[0]
	if len(first.Launch) > 0 {
		p := &fleet.Plan{}
		if err := json.Unmarshal(first.Launch, p); err != nil {
			return nil, fmt.Errorf("decode the stored fleet request of %s: %v: %w", first.Group, err, errPermanent)
		}
		return p, nil
	}
	return l.Fleet.Prepare(ctx, fleet.Request{Name: first.Group, Claim: first.Claim, NodeClass: class, Count: max(first.GroupSize, 1)})
}

// giveUp ends a launch that cannot complete: the instances found for it
// are terminated and its launching records removed (their pods are solved
// for again).
func (l *Launcher) giveUp(ctx context.Context, members []*state.NodeClaim, found []*fleet.Instance, cause error, removed map[string]bool) {
	if len(found) > 0 {
		ids := make([]string, 0, len(found))
		for _, in := range found {
			ids = append(ids, in.InstanceID)
		}
		if err := l.Fleet.Terminate(ctx, ids); err != nil {
			l.Log.Warn("terminate the instances of a launch given up", "token", members[0].Group, "error", err)
			return // the records stay: the next round tries again
		}
	}
	for _, m := range members {
		if m.Phase != state.Launching || m.InstanceID != "" {
			continue
		}
		if err := l.Store.DeleteNodeClaim(ctx, m); err != nil {
			l.Log.Warn("remove the record of a launch given up", "nodeClaim", m.Name, "error", err)
			continue
		}
		removed[m.Name] = true
	}
	l.Log.Warn("launch given up: its re-drive cannot complete", "token", members[0].Group, "terminated", len(found), "error", fmt.Sprint(cause))
}

// errPermanent marks a re-drive failure that no retry can cure.
var errPermanent = errors.New("the launch cannot be re-driven")

// transient reports whether a re-drive's failure may pass by itself:
// throttling, an invocation out of time, an EC2 server fault.
func transient(err error) bool {
	if errors.Is(err, errPermanent) {
		return false
	}
	if throttled(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorFault() == smithy.FaultServer
	}
	return false
}

// taggedInstances finds, with one DescribeInstances listing per re-drive
// pass, the live instances that carry a launch's NodeClaim tags (its group
// token, or a member's own name once tagged with it) and that no member
// has recorded yet.
type taggedInstances struct {
	list    func(ctx context.Context) ([]fleet.Running, error)
	running []fleet.Running
	read    bool
}

func (t *taggedInstances) of(ctx context.Context, members []*state.NodeClaim) ([]*fleet.Instance, error) {
	if !t.read {
		all, err := t.list(ctx)
		if err != nil {
			return nil, err
		}
		t.running, t.read = all, true
	}
	names := map[string]bool{}
	taken := map[string]bool{}
	for _, m := range members {
		names[m.Name], names[m.Group] = true, true
		if m.InstanceID != "" {
			taken[m.InstanceID] = true
		}
	}
	var out []*fleet.Instance
	for _, in := range t.running {
		if !in.ManagedBy || !names[in.NodeClaim] || taken[in.InstanceID] || !liveState(in.State) {
			continue
		}
		out = append(out, &fleet.Instance{
			NodeClaim: in.NodeClaim, NodePool: in.NodePool, InstanceID: in.InstanceID, InstanceType: in.InstanceType,
			Zone: in.Zone, CapacityType: in.CapacityType, ImageID: in.ImageID, SubnetID: in.SubnetID, SecurityGroups: in.SecurityGroups,
			PlacementGroupID: in.PlacementGroupID,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InstanceID < out[j].InstanceID })
	return out, nil
}

// priceOf is the hourly price of an offering (0 when unknown).
func (l *Launcher) priceOf(typ, zone, capacityType string) float64 {
	return fleet.OfferingPrice(l.Catalog, l.Spot, typ, zone, capacityType)
}

// liveState reports whether an instance in this state may still become a
// node.
func liveState(s string) bool { return s == "pending" || s == "running" }

// Phantom reports whether a record is a launch that never got an instance
// and is older than timeout: it no longer counts as capacity in flight
// (its pods are solved for again), and the next re-drive or sweep ends it.
func Phantom(rec *state.NodeClaim, now time.Time, timeout time.Duration) bool {
	return rec.Phase == state.Launching && rec.InstanceID == "" && now.Sub(rec.CreatedAt) > timeout
}
