package orchestration

// podsums.go: the consolidation tick's pods fingerprints, kept in the state
// table's pods summary (state.PodSums) rather than in the NodeClaim records.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
)

// fingerprint records when each of Nodewright's nodes last saw its set of
// reschedulable pods change (consolidateAfter counts from there): in the
// pods summary, never in the records (state.PodSums), and in in.Records'
// copies, which the decision reads. Entries of records that no longer
// exist are pruned; a record not Initialized keeps its entry.
func (r *Run) fingerprint(ctx context.Context, in disruption.Inputs) error {
	read, err := r.Store.PodSums(ctx)
	if err != nil {
		return err
	}
	byNode := map[string][]string{}
	for _, p := range in.Pods {
		if p.Spec.NodeName == "" || !podstate.Active(p) || podstate.FollowsNode(p) {
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], string(p.UID))
	}
	nodeOf := map[string]string{}
	for _, n := range in.Nodes {
		nodeOf[provision.InstanceIDOf(n.Spec.ProviderID)] = n.Name
	}
	// The change is stamped with the time the inputs were read: the
	// decision counts consolidateAfter from in.Now, and a later stamp
	// would have the first tick find consolidateAfter 0s not elapsed.
	now := in.Now
	if now.IsZero() {
		now = r.Exec.Now()
	}
	sums := make(map[string]state.PodSum, len(in.Records))
	for _, rec := range in.Records {
		name := nodeOf[rec.InstanceID]
		if rec.InstanceID == "" || name == "" || rec.Phase != state.Initialized {
			if s, ok := read.Get(rec.Name); ok {
				sums[rec.Name] = s
			}
			continue
		}
		uids := byNode[name]
		sort.Strings(uids)
		sum := sha256.Sum256([]byte(strings.Join(uids, ",")))
		h := hex.EncodeToString(sum[:8])
		if h != rec.PodsHash {
			first := rec.PodsHash == ""
			rec.PodsHash = h
			if !first || rec.PodsChangedAt.IsZero() {
				rec.PodsChangedAt = now
			}
			if first && !rec.InitializedAt.IsZero() && len(uids) == 0 {
				// An empty node first seen: it has been empty since it came up.
				rec.PodsChangedAt = rec.InitializedAt
			}
		}
		// Unchanged too: a record's own (legacy) timer moves into the summary.
		sums[rec.Name] = state.PodSum{Hash: rec.PodsHash, ChangedAt: rec.PodsChangedAt}
	}
	if _, err := r.Store.PutPodSums(ctx, read, sums); err != nil {
		return fmt.Errorf("record the nodes' pods: %w", err)
	}
	return nil
}
