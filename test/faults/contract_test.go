package faults

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// The fakes answer the contract as DynamoDB and EC2 do (test/faults/contract
// holds moto behind the local cloud's AWS front to the same lines).
func TestFakesKeepTheContract(t *testing.T) {
	db, ec := NewDirectFakes()
	ctx := context.Background()
	if got := DynamoContract(ctx, db, table, "contract"); !reflect.DeepEqual(got, DynamoExpected) {
		t.Errorf("DynamoDB fake:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(DynamoExpected, "\n  "))
	}
	if got := EC2Contract(ctx, ec, clusterName, "ami-1", "contract-token"); !reflect.DeepEqual(got, EC2Expected) {
		t.Errorf("EC2 fake:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(EC2Expected, "\n  "))
	}
}
