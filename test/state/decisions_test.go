package state_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/state"
)

// Recorded decisions expire: each item carries the table's TTL attribute
// at its time plus the retention (so DynamoDB deletes it), and readers drop
// older ones themselves, since TTL deletes lazily, up to days late.
func TestDecisionsExpire(t *testing.T) {
	t.Parallel()
	clk := newClock()
	cluster := fmt.Sprintf("c%d-decisions", runID.Add(1))
	db := dynamodb.NewFromConfig(cloud.AWSConfig())
	s, err := state.New(db, cloud.Names.Table, cluster, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	first := clk.Now()
	if err := s.RecordDecision(c, &state.Decision{Function: "provision", Kind: "solve", Summary: "old"}, "a"); err != nil {
		t.Fatal(err)
	}
	clk.Add(state.DecisionRetention - time.Hour)
	second := clk.Now()
	if err := s.RecordDecision(c, &state.Decision{Function: "consolidation", Kind: "action", Summary: "new"}, "b"); err != nil {
		t.Fatal(err)
	}

	out, err := db.Query(c, &dynamodb.QueryInput{
		TableName:                 aws.String(cloud.Names.Table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": names.PartitionKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: state.DecisionsPartition(cluster)}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 2 {
		t.Fatalf("%d decision items, want 2", len(out.Items))
	}
	for i, at := range []time.Time{first, second} {
		n, ok := out.Items[i][names.TTLAttribute].(*types.AttributeValueMemberN)
		if !ok {
			t.Fatalf("decision %d has no %s attribute: %v", i, names.TTLAttribute, out.Items[i])
		}
		want := at.Add(state.DecisionRetention).Unix()
		if got, _ := strconv.ParseInt(n.Value, 10, 64); got != want {
			t.Errorf("decision %d expires at %d, want %d (its time plus %v)", i, got, want, state.DecisionRetention)
		}
	}

	// Past the first one's retention, readers no longer see it, though
	// DynamoDB has not deleted it yet.
	clk.Add(2 * time.Hour)
	ds, err := s.Decisions(c, first.Add(-time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Summary != "new" {
		t.Fatalf("decisions after the first expired: %+v, want only the new one", ds)
	}
}
