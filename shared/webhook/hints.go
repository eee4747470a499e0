package webhook

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
)

// DefaultHintWindow is how long a hint holds off the next one for its
// cluster: at most one provision invocation per cluster per window comes
// from the webhook, however many reviews arrive (the provision function
// batches pods for about a second, ten at most, and sweeps every minute).
const DefaultHintWindow = 10 * time.Second

// HintSortKey is the sort key of a cluster's hint item in the state table
// (state.KeyHint; a test keeps them equal). The webhook does not import
// shared/state: what a function links is what its role is checked to be
// granted, and the webhook may only put this one item.
const HintSortKey = "hint"

// HintPartition is the partition key of a cluster's hint item
// (state.HintsPartition; a test keeps them equal): a partition of its own,
// because IAM can pin the webhook role's writes to a partition key
// (dynamodb:LeadingKeys) but not to a sort key, and the cluster's partition
// holds the NodeClaim records the sweep acts on.
func HintPartition(cluster string) string { return cluster + "#hints" }

// Hint item attributes beyond the table's keys and TTL.
const hintDataAttribute = "data"

// HintAttributes are every attribute the hint item's PutItem names (the
// webhook role's IAM policy allows exactly these).
func HintAttributes() []string {
	return []string{names.PartitionKey, names.SortKey, names.TTLAttribute, hintDataAttribute}
}

// DynamoDBAPI is the part of the DynamoDB API the webhook uses.
type DynamoDBAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// HintGate coalesces hints: Admit says whether this hint is the first for
// the cluster within the window (and records it), so that a burst of
// reviews, real or forged, invokes the provision function once.
type HintGate interface {
	Admit(ctx context.Context, payload []byte) (bool, error)
}

// DynamoDBHintGate keeps one hint item per cluster in the state table
// (pk = HintPartition(cluster), sk = HintSortKey) with its expiry in the TTL attribute
// (epoch seconds). A conditional PutItem succeeds only when no item exists
// or the one there has expired: DynamoDB deletes expired items lazily, so
// the condition checks the expiry itself.
//
// A gate also remembers, for its container, until when the item is known to
// be held: the expiry it wrote, or heldBackoff after a write that found
// another container's item. A refused write still costs a write unit, and
// a busy cluster's reviews come far faster than one a window, so only the
// first review after that time writes.
type DynamoDBHintGate struct {
	Client  DynamoDBAPI
	Table   string
	Cluster string
	Window  time.Duration // 0: DefaultHintWindow
	Now     func() time.Time

	mu        sync.Mutex
	heldUntil time.Time
}

// heldBackoff is how long a gate that found another container's hint
// item holds off writing again: it cannot know that item's expiry, so a
// hint after it may come up to this much late.
const heldBackoff = time.Second

// Admit writes the hint item unless an unexpired one is there (or is known
// to be, from this gate's last write).
func (g *DynamoDBHintGate) Admit(ctx context.Context, payload []byte) (bool, error) {
	window := g.Window
	if window <= 0 {
		window = DefaultHintWindow
	}
	now := g.Now()
	g.mu.Lock()
	held := now.Before(g.heldUntil)
	g.mu.Unlock()
	if held {
		return false, nil
	}
	expires := now.Add(window)
	_, err := g.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(g.Table),
		Item: map[string]ddbtypes.AttributeValue{
			names.PartitionKey: &ddbtypes.AttributeValueMemberS{Value: HintPartition(g.Cluster)},
			names.SortKey:      &ddbtypes.AttributeValueMemberS{Value: HintSortKey},
			names.TTLAttribute: &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(expires.Unix(), 10)},
			hintDataAttribute:  &ddbtypes.AttributeValueMemberS{Value: string(payload)},
		},
		ConditionExpression:      aws.String("attribute_not_exists(#pk) OR #exp <= :now"),
		ExpressionAttributeNames: map[string]string{"#pk": names.PartitionKey, "#exp": names.TTLAttribute},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":now": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
		},
	})
	var refused *ddbtypes.ConditionalCheckFailedException
	switch {
	case errors.As(err, &refused):
		g.hold(now.Add(heldBackoff))
		return false, nil
	case err != nil:
		return false, fmt.Errorf("put hint item: %w", err)
	}
	g.hold(expires)
	return true, nil
}

func (g *DynamoDBHintGate) hold(until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.heldUntil = until
}
