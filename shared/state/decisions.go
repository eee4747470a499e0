package state

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/nodewright/nodewright/shared/names"
)

// DecisionRetention is how long recorded decisions stay readable.
const DecisionRetention = 7 * 24 * time.Hour

// Decision is a record of what a function decided and why, for `nodewright
// explain`, reports and audits: a solve (inputs summarised, NodeClaims with
// their options and prices, pods left pending with the reason), a launch,
// an interruption, a consolidation action.
type Decision struct {
	Time     time.Time `json:"time"`
	Function string    `json:"function"`
	Kind     string    `json:"kind"`
	// Summary is one line a person reads.
	Summary string `json:"summary"`
	// Pods maps a pod (namespace/name) to what was decided for it: "node
	// <name>", "nodeclaim <name> (<type>, <capacity type>, <zone>)", or
	// "pending: <reason>".
	Pods map[string]string `json:"pods,omitempty"`
	// PodsOmitted counts the pods left out of Pods to keep the record
	// within an item's size (the first ones by name are kept).
	PodsOmitted int `json:"podsOmitted,omitempty"`
	// NodeClaims are the NodeClaims a provisioning decision launched (or
	// failed to), each with its cheapest alternatives and their prices.
	NodeClaims []DecidedNodeClaim `json:"nodeClaims,omitempty"`
	// Action is the disruption action a consolidation decision is about.
	Action *DecidedAction `json:"action,omitempty"`
	// Detail is the decision's data (a plan, an action).
	Detail json.RawMessage `json:"detail,omitempty"`
}

// MaxDecidedOptions is how many of a NodeClaim's instance-type options a
// decision keeps (the cheapest); OptionsTotal counts them all.
const MaxDecidedOptions = 10

// DecidedNodeClaim is one NodeClaim of a decision: what was launched (or
// why not) and the options it was chosen from.
type DecidedNodeClaim struct {
	Name         string  `json:"name"`
	NodePool     string  `json:"nodePool"`
	InstanceType string  `json:"instanceType,omitempty"`
	CapacityType string  `json:"capacityType,omitempty"`
	Zone         string  `json:"zone,omitempty"`
	PricePerHour float64 `json:"pricePerHour,omitempty"`
	// Options are the cheapest instance types it could launch as, cheapest
	// first, at most MaxDecidedOptions; OptionsTotal counts them all.
	Options      []DecidedOption `json:"options,omitempty"`
	OptionsTotal int             `json:"optionsTotal,omitempty"`
	// Pods counts the pods planned onto it (Decision.Pods names them).
	Pods  int    `json:"pods"`
	Error string `json:"error,omitempty"`
}

// DecidedOption is an instance type a NodeClaim could launch as, at its
// cheapest offering's price among the NodeClaim's zones and capacity
// types (0: no price known).
type DecidedOption struct {
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType,omitempty"`
	PricePerHour float64 `json:"pricePerHour,omitempty"`
}

// DecidedAction is a disruption action as decided: the nodes it removes,
// the replacements, the price per hour before and after, and where it is.
type DecidedAction struct {
	ID           string   `json:"id"`
	Kind         string   `json:"kind"`
	Method       string   `json:"method,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	Step         string   `json:"step"`
	NodeClaims   []string `json:"nodeClaims"`
	Nodes        []string `json:"nodes,omitempty"`
	Replacements []string `json:"replacements,omitempty"`
	PriceBefore  float64  `json:"priceBefore"`
	PriceAfter   float64  `json:"priceAfter"`
	Cause        string   `json:"cause,omitempty"`
}

// NodeClaimOf returns the NodeClaim the decision gave pod (namespace/name),
// when it gave it a NodeClaim.
func (d *Decision) NodeClaimOf(pod string) (*DecidedNodeClaim, bool) {
	what, ok := d.Pods[pod]
	if !ok {
		return nil, false
	}
	rest, ok := strings.CutPrefix(what, "nodeclaim ")
	if !ok {
		return nil, false
	}
	name, _, _ := strings.Cut(rest, " ")
	for i := range d.NodeClaims {
		if d.NodeClaims[i].Name == name {
			return &d.NodeClaims[i], true
		}
	}
	return nil, false
}

// maxDecisionBytes keeps a decision well inside DynamoDB's 400 KB item.
const maxDecisionBytes = 350 << 10

// encodeDecision is d as stored: without its Detail when too large, and then
// with only as many pods (the first by name) as fit.
func encodeDecision(d *Decision) ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil || len(b) <= maxDecisionBytes {
		return b, err
	}
	short := *d
	short.Detail = nil
	if b, err = json.Marshal(short); err != nil || len(b) <= maxDecisionBytes {
		return b, err
	}
	keys := make([]string, 0, len(d.Pods))
	size := 0
	for k, v := range d.Pods {
		keys = append(keys, k)
		size += len(k) + len(v) + 6
	}
	sort.Strings(keys)
	over := len(b) - maxDecisionBytes
	short.Pods = map[string]string{}
	kept := size
	n := len(keys)
	for n > 0 && size-kept < over {
		n--
		kept -= len(keys[n]) + len(d.Pods[keys[n]]) + 6
	}
	for _, k := range keys[:n] {
		short.Pods[k] = d.Pods[k]
	}
	short.PodsOmitted = d.PodsOmitted + len(keys) - n
	return json.Marshal(short)
}

// RecordDecision stores d (its Time set to now when zero). Decisions that
// exceed an item's size are stored without their Detail and, if still too
// large, with fewer pods (PodsOmitted counts them).
func (s *Store) RecordDecision(ctx context.Context, d *Decision, id string) error {
	if d.Time.IsZero() {
		d.Time = s.now()
	}
	sk := d.Time.UTC().Format("2006-01-02T15:04:05.000000000Z") + "#" + id
	b, err := encodeDecision(d)
	if err != nil {
		return fmt.Errorf("encode decision: %w", err)
	}
	it := item{
		names.PartitionKey: str(DecisionsPartition(s.cluster)), names.SortKey: str(sk),
		attrData: str(string(b)), names.TTLAttribute: expiry(d.Time.Add(DecisionRetention)),
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
		return fmt.Errorf("record decision: %w", err)
	}
	return nil
}

// Decisions returns the decisions recorded since since, newest first, at
// most limit (0: all).
func (s *Store) Decisions(ctx context.Context, since time.Time, limit int) ([]Decision, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk >= :since"),
		ExpressionAttributeNames:  map[string]string{"#pk": names.PartitionKey, "#sk": names.SortKey},
		ExpressionAttributeValues: item{":pk": str(DecisionsPartition(s.cluster)), ":since": str(since.UTC().Format("2006-01-02T15:04:05.000000000Z"))},
		ScanIndexForward:          aws.Bool(false),
	}
	var out []Decision
	cutoff := s.now().Add(-DecisionRetention)
	for {
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read decisions: %w", err)
		}
		for _, it := range page.Items {
			var d Decision
			if err := decode(it, &d); err != nil {
				return nil, err
			}
			if d.Time.Before(cutoff) {
				continue
			}
			out = append(out, d)
			if limit > 0 && len(out) == limit {
				return out, nil
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// DecidedActionOf is a's record in a decision.
func DecidedActionOf(a *Action) *DecidedAction {
	return &DecidedAction{
		ID: a.ID, Kind: a.Kind, Method: a.Method, Reason: a.Reason, Step: a.Step,
		NodeClaims: a.NodeClaims, Nodes: a.Nodes, Replacements: a.Replacements,
		PriceBefore: a.PriceBefore, PriceAfter: a.PriceAfter, Cause: a.Cause,
	}
}
