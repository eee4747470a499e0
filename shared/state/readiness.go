package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// KeyPoolReadiness is the item holding the NodePools the last provision
// read left out of its solves (one item, rewritten when it changes; kept
// here rather than with the prefixes in keys.go so that it reads as one
// unit with its type).
const KeyPoolReadiness = "poolreadiness"

// NotReadyPool is a NodePool left out of solves, and why.
type NotReadyPool struct {
	NodePool  string `json:"nodePool"`
	NodeClass string `json:"nodeClass,omitempty"`
	// Reason is the provision package's typed reason (NodeClassNotFound,
	// SubnetsNotFound, ...).
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// PoolReadiness is what a provision read found: the pools it left out (none:
// every pool was ready), at a time.
type PoolReadiness struct {
	At       time.Time      `json:"at"`
	NotReady []NotReadyPool `json:"notReady,omitempty"`
	// Karpenter names the Karpenter controller the read found running
	// (namespace/holder of its leader-election Lease; "": none):
	// provisioning then launches nothing.
	Karpenter string `json:"karpenter,omitempty"`
}

// PutPoolReadiness stores pr (last writer wins: every writer computes it
// from the same cluster and account).
func (s *Store) PutPoolReadiness(ctx context.Context, pr PoolReadiness) error {
	it, err := s.base(KeyPoolReadiness, pr, 0)
	if err != nil {
		return err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
		return fmt.Errorf("put %s: %w", KeyPoolReadiness, err)
	}
	return nil
}

// PoolReadiness reads what the last provision read stored (the zero value
// when none has yet).
func (s *Store) PoolReadiness(ctx context.Context) (PoolReadiness, error) {
	var pr PoolReadiness
	it, err := s.get(ctx, KeyPoolReadiness)
	if errors.Is(err, ErrNotFound) {
		return pr, nil
	}
	if err != nil {
		return pr, err
	}
	return pr, decode(it, &pr)
}
