package state

import (
	"context"
	"encoding/json"
	"fmt"
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
	// Detail is the decision's data (a plan, an action).
	Detail json.RawMessage `json:"detail,omitempty"`
}

// RecordDecision stores d (its Time set to now when zero). Decisions that
// exceed an item's size are stored without their Detail.
func (s *Store) RecordDecision(ctx context.Context, d *Decision, id string) error {
	if d.Time.IsZero() {
		d.Time = s.now()
	}
	sk := d.Time.UTC().Format("2006-01-02T15:04:05.000000000Z") + "#" + id
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode decision: %w", err)
	}
	if len(b) > 350<<10 {
		short := *d
		short.Detail = nil
		if b, err = json.Marshal(short); err != nil {
			return fmt.Errorf("encode decision: %w", err)
		}
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
