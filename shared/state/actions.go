package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
)

// Action kinds.
const (
	KindInterruption  = "interruption"
	KindConsolidation = "consolidation"
	KindDeletion      = "deletion" // the Node was deleted (finalizer)
	KindExpiration    = "expiration"
	KindDrift         = "drift"
	KindRepair        = "repair"
	KindScaleDown     = "scale-down" // a static NodePool's replicas were lowered
)

// Action steps, in order. An action moves forward only; Done and
// Abandoned end it.
const (
	StepPlanned   = "planned"   // candidates marked; validating (consolidation)
	StepReplacing = "replacing" // replacement NodeClaims launching, not Ready yet
	// StepReplacementReady: every replacement is initialized; the drain
	// has not begun (consolidation).
	StepReplacementReady = "replacement-ready"
	StepDraining         = "draining" // evicting the candidates' pods
	// StepTerminate: drained; the instances are being terminated and the
	// Nodes and records removed.
	StepTerminate = "terminating"
	StepDone      = "done"
	StepAbandoned = "abandoned"
)

// Action is a disruption of one or more nodes that may outlive an
// invocation: later invocations read it and carry it on from its step.
type Action struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	// Method is how consolidation found it (emptiness, multi-node,
	// single-node, expiration, drift).
	Method string `json:"method,omitempty"`
	// Drift is, for a drift, how its node drifted (Disruption.Drift).
	Drift string `json:"drift,omitempty"`
	Step  string `json:"step"`
	// NodeClaims are the nodes being disrupted; Replacements the NodeClaims
	// launched for their pods.
	NodeClaims   []string `json:"nodeClaims"`
	Nodes        []string `json:"nodes,omitempty"`
	Replacements []string `json:"replacements,omitempty"`
	PriceBefore  float64  `json:"priceBefore,omitempty"`
	PriceAfter   float64  `json:"priceAfter,omitempty"`
	// Messages are the interruption messages (event IDs) that led here.
	Messages []string `json:"messages,omitempty"`
	// Deadline is when the nodes go whatever happens (a spot instance's
	// termination, terminationGracePeriod); zero: none.
	Deadline time.Time `json:"deadline,omitzero"`
	Evicted  int       `json:"evicted,omitempty"`
	// Stranded are pods the drain could not move before the deadline.
	Stranded []string `json:"stranded,omitempty"`
	// Cause says why an action was abandoned.
	Cause string `json:"cause,omitempty"`
	// Plan is the decision being carried out (a consolidation command), as
	// its deciding package encodes it: re-validated before acting.
	Plan json.RawMessage `json:"plan,omitempty"`
	// ValidateAt is when a planned action may be validated and carried on.
	ValidateAt time.Time `json:"validateAt,omitzero"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	Version    int64     `json:"-"`
}

// Open reports whether the action is still in progress.
func (a *Action) Open() bool { return a.Step != StepDone && a.Step != StepAbandoned }

// StartAction records a new action and marks its NodeClaims Disrupting,
// all or none: each claim must still have the version the caller read and
// not be disrupted already, so two invocations never act on one node.
// ErrConflict if any of them changed.
func (s *Store) StartAction(ctx context.Context, a *Action, claims []*NodeClaim) error {
	now := s.now()
	a.CreatedAt, a.UpdatedAt = now, now
	if a.Step == "" {
		a.Step = StepPlanned
	}
	ait, err := s.base(Key(PrefixAction, a.ID), a, 1)
	if err != nil {
		return err
	}
	if !a.Open() {
		ait[names.TTLAttribute] = expiry(now.Add(actionRetention))
	}
	items := []types.TransactWriteItem{s.putItem(ait, "attribute_not_exists(#pk)", map[string]string{"#pk": names.PartitionKey}, nil)}
	c := change{put: make(map[string]int64, len(claims))}
	written := make([]*NodeClaim, len(claims))
	marked := make([]NodeClaim, len(claims))
	for i, nc := range claims {
		if nc.Disruption != nil {
			return fmt.Errorf("start action %s: nodeclaim %s is already disrupted by %s: %w", a.ID, nc.Name, nc.Disruption.Action, ErrConflict)
		}
		marked[i] = *nc
		m := &marked[i]
		m.Phase = Disrupting
		m.Disruption = &Disruption{Action: a.ID, Reason: a.Reason, Drift: a.Drift, Since: now}
		it, err := s.nodeClaimItem(m, nc.Version+1)
		if err != nil {
			return err
		}
		cond, nm, vals := versionCondition(nc.Version)
		items = append(items, s.putItem(it, cond, nm, vals))
		m.Version = nc.Version + 1
		c.put[m.Name] = m.Version
		written[i] = m
	}
	// The action, its records and the change item.
	if len(items)+1 > maxTransactItems {
		return fmt.Errorf("start action %s: %d nodes in one action (at most %d)", a.ID, len(claims), maxTransactItems-2)
	}
	if len(claims) == 0 {
		if err := s.transact(ctx, "start action "+a.ID, items); err != nil {
			return err
		}
	} else if err := s.transactRecords(ctx, "start action "+a.ID, items, c, written); err != nil {
		return err
	}
	a.Version = 1
	for i, nc := range claims {
		*nc = marked[i]
	}
	return nil
}

// actionRetention is how long a finished action stays readable (for
// `nodewright status`, explain and duplicate messages).
const actionRetention = 24 * time.Hour

// PutAction writes a if the stored action still has a.Version.
func (s *Store) PutAction(ctx context.Context, a *Action) error {
	a.UpdatedAt = s.now()
	var extra item
	if !a.Open() {
		extra = item{names.TTLAttribute: expiry(a.UpdatedAt.Add(actionRetention))}
	}
	v, err := s.putVersioned(ctx, Key(PrefixAction, a.ID), a, a.Version, extra)
	if err != nil {
		return err
	}
	a.Version = v
	return nil
}

// GetAction reads one action.
func (s *Store) GetAction(ctx context.Context, id string) (*Action, error) {
	it, err := s.get(ctx, Key(PrefixAction, id))
	if err != nil {
		return nil, fmt.Errorf("action %s: %w", id, err)
	}
	a := &Action{}
	if err := decode(it, a); err != nil {
		return nil, err
	}
	a.Version = getNum(it, attrVersion)
	return a, nil
}

// Actions reads every action (open and recently finished), oldest first.
func (s *Store) Actions(ctx context.Context) ([]*Action, error) {
	items, err := s.query(ctx, s.cluster, PrefixAction)
	if err != nil {
		return nil, err
	}
	out := make([]*Action, 0, len(items))
	for _, it := range items {
		a := &Action{}
		if err := decode(it, a); err != nil {
			return nil, err
		}
		a.Version = getNum(it, attrVersion)
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// FirstSeen records an interruption message (by EventBridge event ID) and
// reports whether this is the first time it is seen; the record expires
// after ttl.
func (s *Store) FirstSeen(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	it := s.key(Key(PrefixMessage, id))
	it[names.TTLAttribute] = expiry(s.now().Add(ttl))
	it[attrUntil] = num(s.millis(s.now().Add(ttl)))
	_, err := s.putVersioned(ctx, Key(PrefixMessage, id), map[string]string{"id": id}, 0, item{names.TTLAttribute: it[names.TTLAttribute], attrUntil: it[attrUntil]})
	if errors.Is(err, ErrConflict) {
		// Seen before; but an expired record that DynamoDB has not deleted
		// yet does not count.
		old, gerr := s.get(ctx, Key(PrefixMessage, id))
		if gerr != nil {
			return false, nil
		}
		if time.UnixMilli(getNum(old, attrUntil)).After(s.now()) {
			return false, nil
		}
		if derr := s.deleteVersioned(ctx, Key(PrefixMessage, id), getNum(old, attrVersion)); derr != nil {
			return false, nil
		}
		return s.FirstSeen(ctx, id, ttl)
	}
	return err == nil, err
}
