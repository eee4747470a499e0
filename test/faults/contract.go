package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/state"
)

// The contract the fakes are held to: the same calls, made to the fake and
// to the real service (moto behind the local cloud's AWS front,
// test/faults/contract), must be answered alike. Each contract returns
// what it observed, one line per call, and the expected lines are those of
// DynamoDB and EC2 as documented.

// NewDirectFakes returns the suite's DynamoDB and EC2 fakes as plain
// clients (no schedule: every call takes effect at once), for the
// contract test.
func NewDirectFakes() (state.DynamoDB, fleet.EC2API) {
	cfgOnce.Do(func() { cfg = newConfig() })
	clock := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	w := newWorld(newSim(1, clock, policy{}), cfg)
	w.direct = true
	return w.dynamo, w.ec2
}

// outcome names an answer: ok, or the error code (with a transaction's
// cancellation reasons).
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		var codes []string
		for _, r := range tce.CancellationReasons {
			codes = append(codes, aws.ToString(r.Code))
		}
		return "TransactionCanceledException[" + strings.Join(codes, ",") + "]"
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return "error: " + err.Error()
}

// DynamoExpected is what DynamoDB answers DynamoContract.
var DynamoExpected = []string{
	"put a new item: ok",
	"put it again if it does not exist: ConditionalCheckFailedException",
	"acquire a lease: ok token=1",
	"acquire it while held: ConditionalCheckFailedException",
	"acquire it once expired: ok token=2",
	"transaction, one condition failing: TransactionCanceledException[None,ConditionalCheckFailed]",
	"the transaction's put took no effect: absent",
	"transaction, two operations on one item: ValidationException",
	"transaction, all conditions holding: ok",
	"query by prefix: ok a,b",
	"query a sort-key range: ok b",
	"batch get two keys, one absent: ok a",
	"query the instance index: ok b",
}

// DynamoContract makes the store's kinds of calls in partition pk of
// table.
func DynamoContract(ctx context.Context, db state.DynamoDB, table, pk string) []string {
	var out []string
	note := func(what string, err error, extra ...string) {
		out = append(out, strings.TrimSpace(what+": "+outcome(err)+" "+strings.Join(extra, " ")))
	}
	key := func(sk string) item {
		return item{names.PartitionKey: &types.AttributeValueMemberS{Value: pk}, names.SortKey: &types.AttributeValueMemberS{Value: sk}}
	}
	with := func(it item, kv ...string) item {
		for i := 0; i+1 < len(kv); i += 2 {
			it[kv[i]] = &types.AttributeValueMemberS{Value: kv[i+1]}
		}
		return it
	}
	notExists := aws.String("attribute_not_exists(#pk)")
	pkName := map[string]string{"#pk": names.PartitionKey}
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: with(key("x#a"), "data", "1"), ConditionExpression: notExists, ExpressionAttributeNames: pkName})
	note("put a new item", err)
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: with(key("x#a"), "data", "2"), ConditionExpression: notExists, ExpressionAttributeNames: pkName})
	note("put it again if it does not exist", err)

	acquire := func(now int64) (string, error) {
		o, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &table, Key: key("lease#x"),
			UpdateExpression:         aws.String("SET #h = :h, #u = :u, #t = if_not_exists(#t, :zero) + :one"),
			ConditionExpression:      aws.String("attribute_not_exists(#h) OR #u < :now"),
			ExpressionAttributeNames: map[string]string{"#h": "holder", "#u": "until", "#t": "token"},
			ExpressionAttributeValues: item{":h": &types.AttributeValueMemberS{Value: "me"}, ":u": &types.AttributeValueMemberN{Value: fmt.Sprint(now + 60)},
				":zero": &types.AttributeValueMemberN{Value: "0"}, ":one": &types.AttributeValueMemberN{Value: "1"}, ":now": &types.AttributeValueMemberN{Value: fmt.Sprint(now)}},
			ReturnValues: types.ReturnValueAllNew,
		})
		if err != nil {
			return "", err
		}
		t, _ := o.Attributes["token"].(*types.AttributeValueMemberN)
		if t == nil {
			return "token=?", nil
		}
		return "token=" + t.Value, nil
	}
	tok, err := acquire(100)
	note("acquire a lease", err, tok)
	tok, err = acquire(120)
	note("acquire it while held", err, tok)
	tok, err = acquire(200)
	note("acquire it once expired", err, tok)

	put := func(sk string, kv ...string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: with(key(sk), kv...), ConditionExpression: notExists, ExpressionAttributeNames: pkName}}
	}
	check := func(sk, cond string) types.TransactWriteItem {
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: &table, Key: key(sk), ConditionExpression: aws.String(cond), ExpressionAttributeNames: pkName}}
	}
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("x#b", "data", "b"), check("x#a", "attribute_not_exists(#pk)")}})
	note("transaction, one condition failing", err)
	g, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key("x#b"), ConsistentRead: aws.Bool(true)})
	present := "absent"
	if err == nil && len(g.Item) > 0 {
		present = "present"
	}
	out = append(out, "the transaction's put took no effect: "+present)
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("x#b", "data", "b"), check("x#b", "attribute_not_exists(#pk)")}})
	note("transaction, two operations on one item", err)
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		put("x#b", "data", "b", names.InstanceIDAttribute, "i-"+pk), check("x#a", "attribute_exists(#pk)")}})
	note("transaction, all conditions holding", err)

	q, err := db.Query(ctx, &dynamodb.QueryInput{
		TableName: &table, KeyConditionExpression: aws.String("#pk = :pk AND begins_with(#sk, :p)"),
		ExpressionAttributeNames:  map[string]string{"#pk": names.PartitionKey, "#sk": names.SortKey},
		ExpressionAttributeValues: item{":pk": &types.AttributeValueMemberS{Value: pk}, ":p": &types.AttributeValueMemberS{Value: "x#"}}, ConsistentRead: aws.Bool(true),
	})
	note("query by prefix", err, sortKeys(q, err, "x#"))
	q, err = db.Query(ctx, &dynamodb.QueryInput{
		TableName: &table, KeyConditionExpression: aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
		ExpressionAttributeNames: map[string]string{"#pk": names.PartitionKey, "#sk": names.SortKey},
		ExpressionAttributeValues: item{":pk": &types.AttributeValueMemberS{Value: pk}, ":from": &types.AttributeValueMemberS{Value: "x#b"},
			":to": &types.AttributeValueMemberS{Value: "x#~"}}, ConsistentRead: aws.Bool(true),
	})
	note("query a sort-key range", err, sortKeys(q, err, "x#"))
	bg, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		table: {Keys: []item{key("x#a"), key("x#zz")}, ConsistentRead: aws.Bool(true)}}})
	var got string
	if err == nil {
		got = sortKeys(&dynamodb.QueryOutput{Items: bg.Responses[table]}, nil, "x#")
	}
	note("batch get two keys, one absent", err, got)
	// The index is eventually consistent in DynamoDB (and moto answers at
	// once): ask until it answers.
	var iq *dynamodb.QueryOutput
	for range 20 {
		iq, err = db.Query(ctx, &dynamodb.QueryInput{
			TableName: &table, IndexName: aws.String(names.IndexByInstanceID), KeyConditionExpression: aws.String("#i = :i"),
			ExpressionAttributeNames:  map[string]string{"#i": names.InstanceIDAttribute},
			ExpressionAttributeValues: item{":i": &types.AttributeValueMemberS{Value: "i-" + pk}},
		})
		if err != nil || len(iq.Items) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	note("query the instance index", err, sortKeys(iq, err, "x#"))
	return out
}

func sortKeys(q *dynamodb.QueryOutput, err error, prefix string) string {
	if err != nil || q == nil {
		return ""
	}
	var ks []string
	for _, it := range q.Items {
		if v, ok := it[names.SortKey].(*types.AttributeValueMemberS); ok {
			ks = append(ks, strings.TrimPrefix(v.Value, prefix))
		}
	}
	return strings.Join(ks, ",")
}

// EC2Expected is what EC2 answers EC2Contract.
var EC2Expected = []string{
	"a subnet of the cluster: ok",
	"create a launch template: ok",
	"create a fleet: ok 1 instance",
	"the same token and request again: ok the same instances",
	"the same token, another request: IdempotentParameterMismatch",
	"find the instance by its tag: ok 1",
	"terminate it: ok",
	"it is no longer running: ok 0",
	"list the cluster's launch templates by tag: ok 1",
	"delete the launch template: ok",
}

// EC2Contract launches one instance by CreateFleet in the cluster's
// subnet with image, and asks again with the same ClientToken (token).
func EC2Contract(ctx context.Context, api fleet.EC2API, cluster, image, token string) []string {
	var out []string
	note := func(what string, err error, extra ...string) {
		out = append(out, strings.TrimSpace(what+": "+outcome(err)+" "+strings.Join(extra, " ")))
	}
	sn, err := api.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{cluster}}}})
	if err == nil && len(sn.Subnets) == 0 {
		err = errors.New("no subnet")
	}
	note("a subnet of the cluster", err)
	if err != nil {
		return out
	}
	subnet, zone := aws.ToString(sn.Subnets[0].SubnetId), aws.ToString(sn.Subnets[0].AvailabilityZone)
	lt := "contract-" + token
	ltTag := "contract-" + token
	_, err = api.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: &lt, LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: &image},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: aws.String(names.TagKeyCluster(ltTag)), Value: aws.String(names.TagValueOwned)}}}}})
	note("create a launch template", err)
	fleetIn := func(typ string) *ec2.CreateFleetInput {
		return &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant, ClientToken: &token,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: &lt, Version: aws.String("$Latest")},
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(typ), SubnetId: &subnet, AvailabilityZone: &zone}},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
			OnDemandOptions:             &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
				{Key: aws.String(names.TagKeyNodeClaim), Value: &token}, {Key: aws.String(names.TagKeyCluster(cluster)), Value: aws.String(names.TagValueOwned)}}}},
		}
	}
	ids := func(o *ec2.CreateFleetOutput) []string {
		var out []string
		if o != nil {
			for _, fi := range o.Instances {
				out = append(out, fi.InstanceIds...)
			}
		}
		return out
	}
	first, err := api.CreateFleet(ctx, fleetIn("c6a.large"))
	note("create a fleet", err, fmt.Sprintf("%d instance", len(ids(first))))
	again, err := api.CreateFleet(ctx, fleetIn("c6a.large"))
	same := "other instances"
	if strings.Join(ids(again), ",") == strings.Join(ids(first), ",") {
		same = "the same instances"
	}
	note("the same token and request again", err, same)
	_, err = api.CreateFleet(ctx, fleetIn("c6a.xlarge"))
	note("the same token, another request", err)
	d, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:" + names.TagKeyNodeClaim), Values: []string{token}}}})
	note("find the instance by its tag", err, fmt.Sprint(countInstances(d)))
	_, err = api.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids(first)})
	note("terminate it", err)
	d, err = api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + names.TagKeyNodeClaim), Values: []string{token}}, {Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}})
	note("it is no longer running", err, fmt.Sprint(countInstances(d)))
	lts, err := api.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:" + names.TagKeyCluster(ltTag)), Values: []string{names.TagValueOwned}}}})
	listed := 0
	if err == nil {
		for _, t := range lts.LaunchTemplates {
			if aws.ToString(t.LaunchTemplateName) == lt && t.CreateTime != nil {
				listed++
			}
		}
	}
	note("list the cluster's launch templates by tag", err, fmt.Sprint(listed))
	_, err = api.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: &lt})
	note("delete the launch template", err)
	// Deleting it again is InvalidLaunchTemplateName.NotFoundException in
	// EC2 (and the fake); moto answers MissingParameter: not held here.
	return out
}

func countInstances(d *ec2.DescribeInstancesOutput) int {
	n := 0
	if d != nil {
		for _, r := range d.Reservations {
			n += len(r.Instances)
		}
	}
	return n
}
