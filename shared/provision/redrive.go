package provision

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/state"
)

// redrive recovers launches an invocation left behind: a record still
// launching after Options.RedriveAfter was written by an invocation that
// died during or after CreateFleet. Its fleet is called again with the
// same ClientToken, which EC2 answers with the first call's instances:
// they are adopted, so nothing leaks and nothing launches twice. A fleet
// that launched nothing removes the records (a retry takes new names).
func (r *Reconciler) redrive(ctx context.Context, w *world, rep *Report) error {
	now := r.Now()
	groups := map[string][]*state.NodeClaim{}
	for _, rec := range w.records {
		if rec.Group == "" {
			rec.Group = rec.Name
		}
		groups[rec.Group] = append(groups[rec.Group], rec)
	}
	classes := map[string]*apis.EC2NodeClass{}
	for _, c := range w.classes {
		classes[c.Name] = c
	}
	tokens := make([]string, 0, len(groups))
	for t, members := range groups {
		for _, m := range members {
			if m.Phase == state.Launching && now.Sub(m.CreatedAt) >= r.Options.RedriveAfter {
				tokens = append(tokens, t)
				break
			}
		}
	}
	sort.Strings(tokens)
	removed := map[string]bool{}
	for _, token := range tokens {
		members := groups[token]
		sortedRecords(members)
		class := classes[members[0].NodeClass]
		if class == nil {
			r.Log.Warn("cannot re-drive a launch: its EC2NodeClass is not configured", "token", token, "nodeClass", members[0].NodeClass)
			continue
		}
		size := max(members[0].GroupSize, 1)
		insts, err := r.createFleet(ctx, token, members[0].Claim, class, size)
		if err != nil && fleet.UnavailableOfferings(err) == nil {
			var le *fleet.LaunchError
			if !errors.As(err, &le) {
				r.Log.Warn("re-drive a launch", "token", token, "error", err)
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
				if derr := r.Store.DeleteNodeClaim(ctx, m); derr == nil {
					removed[m.Name] = true
				}
				r.Log.Info("re-driven launch launched nothing for this nodeclaim: record removed", "nodeClaim", m.Name, "error", fmt.Sprint(err))
				continue
			}
			in := *free[0]
			free = free[1:]
			in.NodeClaim = m.Name
			if aerr := r.adopt(ctx, m, &in, class); aerr == nil {
				rep.Recovered = append(rep.Recovered, m.Name)
				r.Log.Info("launch recovered: instance adopted", "nodeClaim", m.Name, "instance", in.InstanceID)
			}
		}
	}
	if len(removed) > 0 {
		kept := w.records[:0]
		for _, rec := range w.records {
			if !removed[rec.Name] {
				kept = append(kept, rec)
			}
		}
		w.records = kept
	}
	return nil
}
