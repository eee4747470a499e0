package state

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxBlob is the largest compressed blob the store writes (DynamoDB items
// are at most 400 KB).
const maxBlob = 350 << 10

const attrBlob = "blob"

// PutBlob stores data, gzip-compressed, under key, stamped with the store's
// time. It is for caches shared by invocations (the spot price table):
// last writer wins.
func (s *Store) PutBlob(ctx context.Context, key string, data []byte) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return fmt.Errorf("compress %s: %w", key, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compress %s: %w", key, err)
	}
	if buf.Len() > maxBlob {
		return fmt.Errorf("put %s: %d bytes compressed (at most %d)", key, buf.Len(), maxBlob)
	}
	it := s.key(key)
	it[attrBlob] = &types.AttributeValueMemberB{Value: buf.Bytes()}
	it[attrUntil] = num(s.millis(s.now()))
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// GetBlob returns the data stored under key and when it was stored
// (ErrNotFound if none).
func (s *Store) GetBlob(ctx context.Context, key string) ([]byte, time.Time, error) {
	it, err := s.get(ctx, key)
	if err != nil {
		return nil, time.Time{}, err
	}
	b, ok := it[attrBlob].(*types.AttributeValueMemberB)
	if !ok {
		return nil, time.Time{}, fmt.Errorf("get %s: %w", key, errors.New("no blob"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(b.Value))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("decompress %s: %w", key, err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("decompress %s: %w", key, err)
	}
	return data, time.UnixMilli(getNum(it, attrUntil)), nil
}
