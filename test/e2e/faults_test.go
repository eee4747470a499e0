package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/localcloud/awsfront"
	"github.com/nodewright/nodewright/test/localcloud/cloudfault"
)

// TestAWS runs the AWS side of the local cloud through the real SDK at the
// AWS front: seeding, capacity pools, throttling, spot prices and
// interruptions. The subtests share one local cloud.
func TestAWS(t *testing.T) {
	lc := localcloud.StartForTest(t, localcloud.Options{BootDelay: 500 * time.Millisecond})
	cfg := lc.AWSConfig()
	ec2c := ec2.NewFromConfig(cfg)
	ud := nodeUserData(lc.Cluster.Name, lc.Cluster.Endpoint, lc.Cluster.CAData, "karpenter.sh/nodepool=default", "")
	lt := launchTemplate(context.Background(), t, lc, "faults", ud)
	q := &queueReader{sqs: sqs.NewFromConfig(cfg), url: lc.Seeded.QueueURL}

	t.Run("seeded", func(t *testing.T) { testSeeded(t, lc) })
	t.Run("capacity", func(t *testing.T) { testCapacity(t, lc, ec2c, lt) })
	t.Run("idempotent", func(t *testing.T) { testIdempotent(t, lc, ec2c, lt) })
	t.Run("throttle", func(t *testing.T) { testThrottle(t, lc) })
	t.Run("spot prices", func(t *testing.T) { testSpotPrices(t, lc, ec2c) })
	t.Run("spot interruption", func(t *testing.T) { testSpotInterruption(t, lc, ec2c, lt, q) })
	t.Run("other interruptions", func(t *testing.T) { testOtherInterruptions(t, lc, ec2c, lt, q) })
}

func testSeeded(t *testing.T, lc *localcloud.Cloud) {
	ctx := context.Background()
	cfg := lc.AWSConfig()
	ec2c := ec2.NewFromConfig(cfg)
	disc := []ec2types.Filter{{Name: aws.String("tag:" + lc.Names.DiscoveryTag), Values: []string{lc.Cluster.Name}}}
	sns, err := ec2c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: disc})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]bool{}
	for _, s := range sns.Subnets {
		zones[aws.ToString(s.AvailabilityZone)] = true
	}
	if len(sns.Subnets) != 3 || len(zones) != 3 {
		t.Errorf("discovered subnets = %d in zones %v, want 3 in 3 zones", len(sns.Subnets), zones)
	}
	sgs, err := ec2c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: disc})
	if err != nil || len(sgs.SecurityGroups) != 1 || aws.ToString(sgs.SecurityGroups[0].GroupId) != lc.Seeded.SecurityGroupID {
		t.Errorf("discovered security groups = %+v, %v; want %s", sgs, err, lc.Seeded.SecurityGroupID)
	}
	for _, arch := range []string{"x86_64", "arm64"} {
		id := lc.Seeded.Parameters[localcloud.AMIParameter(lc.Cluster.Version, arch, "standard")]
		imgs, err := ec2c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
		if err != nil || len(imgs.Images) != 1 || string(imgs.Images[0].Architecture) != arch {
			t.Errorf("AMI %q for %s: %+v, %v", id, arch, imgs, err)
		}
	}
	ddb := dynamodb.NewFromConfig(cfg)
	tbl, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(lc.Names.Table)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keySchema(tbl.Table.KeySchema), names.PartitionKey+" HASH, "+names.SortKey+" RANGE"; got != want {
		t.Errorf("table key schema %q, want %q", got, want)
	}
	gsis := map[string]string{}
	for _, g := range tbl.Table.GlobalSecondaryIndexes {
		gsis[aws.ToString(g.IndexName)] = keySchema(g.KeySchema)
	}
	wantGSIs := map[string]string{
		names.IndexByInstanceID: names.InstanceIDAttribute + " HASH",
		names.IndexByNodePool:   names.NodePoolAttribute + " HASH, " + names.IndexByNodePoolSortKey + " RANGE",
	}
	if !reflect.DeepEqual(gsis, wantGSIs) {
		t.Errorf("table indexes %v, want %v", gsis, wantGSIs)
	}
	ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(lc.Names.Table)})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != names.TTLAttribute {
		t.Errorf("TTL = %+v, %v", ttl, err)
	}
	if env := lc.Env(); env[names.EnvTableName] != lc.Names.Table || env[names.EnvQueueURL] != lc.Seeded.QueueURL {
		t.Errorf("Env() = %v: want the table %s and the queue %s", env, lc.Names.Table, lc.Seeded.QueueURL)
	}
	attrs, err := sqs.NewFromConfig(cfg).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(lc.Seeded.QueueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
	if err != nil {
		t.Fatalf("queue attributes: %v", err)
	}
	var redrive struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &redrive); err != nil ||
		redrive.DeadLetterTargetArn != lc.Seeded.DLQARN || redrive.MaxReceiveCount != names.InterruptionMaxReceives {
		t.Errorf("redrive policy = %q (%v); want DLQ %s after %d receives", attrs.Attributes["RedrivePolicy"], err, lc.Seeded.DLQARN, names.InterruptionMaxReceives)
	}
}

// keySchema prints a key schema as "attr HASH, attr RANGE".
func keySchema(ks []ddbtypes.KeySchemaElement) string {
	parts := make([]string, 0, len(ks))
	for _, k := range ks {
		parts = append(parts, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return strings.Join(parts, ", ")
}

func testCapacity(t *testing.T, lc *localcloud.Cloud, ec2c *ec2.Client, lt string) {
	ctx := context.Background()
	a, b := lc.Seeded.Subnets[0], lc.Seeded.Subnets[1]
	lc.AWS.SetCapacity("c5.large", a.Zone, awsfront.Spot, 0)
	lc.AWS.SetCapacity("c5.large", b.Zone, awsfront.Spot, 1)
	t.Cleanup(func() {
		lc.AWS.SetCapacity("c5.large", a.Zone, awsfront.Spot, -1)
		lc.AWS.SetCapacity("c5.large", b.Zone, awsfront.Spot, -1)
	})
	out, err := ec2c.CreateFleet(ctx, fleetInput(lc, lt, "spot", 2, override("c5.large", a), override("c5.large", b)))
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	launched := 0
	for _, in := range out.Instances {
		launched += len(in.InstanceIds)
		if aws.ToString(in.LaunchTemplateAndOverrides.Overrides.SubnetId) != b.ID || in.Lifecycle != ec2types.InstanceLifecycleSpot {
			t.Errorf("launched from %+v (%s), want subnet %s spot", in.LaunchTemplateAndOverrides.Overrides, in.Lifecycle, b.ID)
		}
	}
	if launched != 1 {
		t.Errorf("launched %d instances, want 1 (pool b had 1)", launched)
	}
	ice := map[string]bool{}
	for _, e := range out.Errors {
		if aws.ToString(e.ErrorCode) != "InsufficientInstanceCapacity" {
			t.Errorf("error code %q, want InsufficientInstanceCapacity", aws.ToString(e.ErrorCode))
		}
		ice[aws.ToString(e.LaunchTemplateAndOverrides.Overrides.SubnetId)] = true
	}
	if !ice[a.ID] || !ice[b.ID] {
		t.Errorf("ICE errors for subnets %v, want both %s (empty) and %s (ran out)", ice, a.ID, b.ID)
	}
	if n := lc.AWS.Capacity("c5.large", b.Zone, awsfront.Spot); n != 0 {
		t.Errorf("pool b capacity = %d after launch, want 0", n)
	}
	// On-demand pools are separate: the same type and zone still launches.
	od, err := ec2c.CreateFleet(ctx, fleetInput(lc, lt, "on-demand", 1, override("c5.large", a)))
	if err != nil || len(od.Errors) != 0 || len(od.Instances) != 1 {
		t.Errorf("on-demand CreateFleet = %+v, %v; want one instance", od, err)
	}
}

func testIdempotent(t *testing.T, lc *localcloud.Cloud, ec2c *ec2.Client, lt string) {
	ctx := context.Background()
	in := fleetInput(lc, lt, "on-demand", 1, override("t3.small", lc.Seeded.Subnets[2]))
	in.ClientToken = aws.String("nodeclaim-default-x7k2p")
	first, err := ec2c.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	second, err := ec2c.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Instances) != 1 || aws.ToString(first.FleetId) != aws.ToString(second.FleetId) ||
		first.Instances[0].InstanceIds[0] != second.Instances[0].InstanceIds[0] {
		t.Errorf("same ClientToken launched twice: %+v then %+v", first.Instances, second.Instances)
	}
}

func testThrottle(t *testing.T, lc *localcloud.Cloud) {
	ctx := context.Background()
	lc.AWS.Throttle("DescribeInstances", 2)
	if _, err := ec2.NewFromConfig(lc.AWSConfig()).DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatalf("DescribeInstances with the default retryer: %v", err)
	}
	if n := lc.AWS.Throttled("DescribeInstances"); n != 2 {
		t.Errorf("throttled %d calls, want 2 (the retryer retried them)", n)
	}
	lc.AWS.Throttle("DescribeInstances", 1)
	_, err := ec2.NewFromConfig(lc.AWSConfig(), func(o *ec2.Options) { o.RetryMaxAttempts = 1 }).DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "RequestLimitExceeded" {
		t.Errorf("without retries: err = %v, want RequestLimitExceeded", err)
	}
}

func testSpotPrices(t *testing.T, lc *localcloud.Cloud, ec2c *ec2.Client) {
	ctx := context.Background()
	out, err := ec2c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large", "c6g.xlarge"}, ProductDescriptions: []string{"Linux/UNIX"}, StartTime: aws.Time(time.Now()),
	})
	if err != nil {
		t.Fatal(err)
	}
	model := pricing.Model{Catalog: catalog.Default()}
	seen := map[string]bool{}
	for _, sp := range out.SpotPriceHistory {
		want, _ := model.SpotPrice(string(sp.InstanceType), aws.ToString(sp.AvailabilityZone))
		got := aws.ToString(sp.SpotPrice)
		if got != formatPrice(want) {
			t.Errorf("%s in %s: price %s, want the model's %s", sp.InstanceType, aws.ToString(sp.AvailabilityZone), got, formatPrice(want))
		}
		seen[got] = true
	}
	if len(out.SpotPriceHistory) != 6 || len(seen) < 5 {
		t.Errorf("got %d prices with %d distinct values, want 6 (2 types x 3 zones) that differ by type and zone", len(out.SpotPriceHistory), len(seen))
	}
	// The production price source reads the whole market through the front.
	prices := pricing.NewEC2Prices(ec2c, time.Now)
	if err := prices.Refresh(ctx); err != nil {
		t.Fatalf("pricing.EC2Prices.Refresh: %v", err)
	}
	p, ok := prices.SpotPrice("m5.large", lc.Seeded.Subnets[0].Zone)
	want, _ := model.SpotPrice("m5.large", lc.Seeded.Subnets[0].Zone)
	if !ok || p != want || prices.Len() < 1000 {
		t.Errorf("EC2Prices: m5.large %v (%v), %d prices; want %v and the whole catalog", p, ok, prices.Len(), want)
	}
}

func formatPrice(p float64) string { return strconv.FormatFloat(p, 'f', 6, 64) }

func testSpotInterruption(t *testing.T, lc *localcloud.Cloud, ec2c *ec2.Client, lt string, q *queueReader) {
	ctx := context.Background()
	sn := lc.Seeded.Subnets[1]
	id := launchOne(t, lc, ec2c, lt, "spot", "m5.xlarge", sn)
	node := waitNode(t, lc, "aws:///"+sn.Zone+"/"+id)
	if node.Labels["karpenter.sh/capacity-type"] != "spot" {
		t.Errorf("capacity-type label = %q, want spot", node.Labels["karpenter.sh/capacity-type"])
	}
	if err := cloudfault.Inject(ctx, lc.AWS, cloudfault.Spot, id, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	ev := q.waitFor(t, "EC2 Spot Instance Interruption Warning", id)
	var d struct {
		InstanceID string `json:"instance-id"`
		Action     string `json:"instance-action"`
	}
	if err := json.Unmarshal(ev.Detail, &d); err != nil || d.InstanceID != id || d.Action != "terminate" {
		t.Errorf("detail = %s (%v)", ev.Detail, err)
	}
	if ev.Source != "aws.ec2" || ev.Region != lc.Options.Region || len(ev.Resources) != 1 || !strings.HasSuffix(ev.Resources[0], "instance/"+id) || ev.Time.IsZero() {
		t.Errorf("envelope = %+v", ev)
	}
	if st, err := instanceState(ctx, ec2c, id); err != nil || st != ec2types.InstanceStateNameRunning {
		t.Errorf("instance state right after the warning = %s, %v; want running until the notice ends", st, err)
	}
	eventually(t, 30*time.Second, "instance "+id+" terminated", func() (bool, error) {
		st, err := instanceState(ctx, ec2c, id)
		return st == ec2types.InstanceStateNameTerminated, err
	})
	states := map[string]bool{}
	for range 2 {
		var sc struct {
			State string `json:"state"`
		}
		ev := q.waitFor(t, "EC2 Instance State-change Notification", id)
		if err := json.Unmarshal(ev.Detail, &sc); err != nil {
			t.Fatalf("state change detail %s: %v", ev.Detail, err)
		}
		states[sc.State] = true
	}
	if !states["shutting-down"] || !states["terminated"] {
		t.Errorf("state changes %v, want shutting-down and terminated", states)
	}
	eventually(t, 30*time.Second, "node "+node.Name+" gone", func() (bool, error) {
		_, err := lc.Kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func testOtherInterruptions(t *testing.T, lc *localcloud.Cloud, ec2c *ec2.Client, lt string, q *queueReader) {
	ctx := context.Background()
	sn := lc.Seeded.Subnets[2]
	id := launchOne(t, lc, ec2c, lt, "on-demand", "m5.large", sn)
	if err := cloudfault.Inject(ctx, lc.AWS, cloudfault.Rebalance, id, 0); err != nil {
		t.Fatal(err)
	}
	q.waitFor(t, "EC2 Instance Rebalance Recommendation", id)
	if err := cloudfault.Inject(ctx, lc.AWS, cloudfault.CapacityReservation, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	cr := q.waitFor(t, "EC2 Capacity Reservation Instance Interruption Warning", id)
	if !strings.Contains(string(cr.Detail), "instance-termination-time") {
		t.Errorf("capacity reservation detail = %s", cr.Detail)
	}
	if err := cloudfault.Inject(ctx, lc.AWS, cloudfault.ScheduledChange, id, time.Second); err != nil {
		t.Fatal(err)
	}
	h := q.waitFor(t, "AWS Health Event", id)
	var hd struct {
		Category string `json:"eventTypeCategory"`
		Entities []struct {
			Value string `json:"entityValue"`
		} `json:"affectedEntities"`
	}
	if err := json.Unmarshal(h.Detail, &hd); err != nil || hd.Category != "scheduledChange" || len(hd.Entities) != 1 || hd.Entities[0].Value != id {
		t.Errorf("health detail = %s (%v)", h.Detail, err)
	}
	eventually(t, 30*time.Second, "instance "+id+" stopped", func() (bool, error) {
		st, err := instanceState(ctx, ec2c, id)
		return st == ec2types.InstanceStateNameStopped, err
	})
	if err := cloudfault.Inject(ctx, lc.AWS, cloudfault.Spot, "i-0000000000000000", 0); err == nil {
		t.Error("interrupting an unknown instance: no error")
	}
}

func launchOne(t *testing.T, lc *localcloud.Cloud, ec2c *ec2.Client, lt, capType, typ string, sn localcloud.Subnet) string {
	t.Helper()
	out, err := ec2c.CreateFleet(context.Background(), fleetInput(lc, lt, capType, 1, override(typ, sn)))
	if err != nil || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("CreateFleet %s %s: %+v, %v", capType, typ, out, err)
	}
	return out.Instances[0].InstanceIds[0]
}

// queueReader drains the interruption queue into a buffer that waits scan,
// so messages for other waits are kept.
type queueReader struct {
	sqs *sqs.Client
	url string

	mu  sync.Mutex
	buf []lambdaevents.CloudWatchEvent
}

// waitFor returns (and removes from the buffer) the first event of
// detailType that names instanceID.
func (q *queueReader) waitFor(t *testing.T, detailType, instanceID string) lambdaevents.CloudWatchEvent {
	t.Helper()
	var found lambdaevents.CloudWatchEvent
	eventually(t, 30*time.Second, detailType+" for "+instanceID, func() (bool, error) {
		if q.take(detailType, instanceID, &found) {
			return true, nil
		}
		return false, q.receive()
	})
	return found
}

func (q *queueReader) take(detailType, id string, out *lambdaevents.CloudWatchEvent) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, ev := range q.buf {
		if ev.DetailType == detailType && strings.Contains(string(ev.Detail), id) {
			*out = ev
			q.buf = append(q.buf[:i], q.buf[i+1:]...)
			return true
		}
	}
	return false
}

func (q *queueReader) receive() error {
	ctx := context.Background()
	out, err := q.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		return err
	}
	for _, m := range out.Messages {
		var ev lambdaevents.CloudWatchEvent
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
			return err
		}
		q.mu.Lock()
		q.buf = append(q.buf, ev)
		q.mu.Unlock()
		if _, err := q.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return err
		}
	}
	return nil
}
