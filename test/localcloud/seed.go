package localcloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/nodewright/nodewright/infra/queueattrs"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/names"
)

// Names are the physical names of the AWS resources Nodewright uses for
// one cluster, as the deployed stack would create them. The schema (key,
// TTL and index attribute names) comes from shared/names, where the stack
// and the functions read it too, and the queues' attributes (visibility,
// retention, receive limit, encryption) from infra/queueattrs, the golden
// file of the synthesized template; the functions find the physical names
// in the environment (Cloud.Env).
type Names struct {
	Table             string // DynamoDB state table
	InterruptionQueue string // SQS queue EventBridge rules send to
	InterruptionDLQ   string // its dead-letter queue
	RecheckQueue      string // the urgent rules' second, delayed queue
	NodeRole          string // IAM role of launched nodes (Karpenter's default name)
	InstanceProfile   string // its instance profile, which launch templates name (moto does not check it exists)
	DiscoveryTag      string // tag key on subnets and security groups: value = cluster
}

// NamesFor returns the resource names for cluster.
func NamesFor(cluster string) Names {
	return Names{
		Table:             "nodewright-" + cluster + "-state",
		InterruptionQueue: "nodewright-" + cluster + "-interruption",
		InterruptionDLQ:   "nodewright-" + cluster + "-interruption-dlq",
		RecheckQueue:      "nodewright-" + cluster + "-interruption-recheck",
		NodeRole:          "KarpenterNodeRole-" + cluster,
		InstanceProfile:   "nodewright-" + cluster + "-node",
		DiscoveryTag:      "karpenter.sh/discovery",
	}
}

// Subnet is a seeded subnet.
type Subnet struct {
	ID, Zone, CIDR string
}

// AWSResources are the seeded resources of the cluster.
type AWSResources struct {
	VPCID           string
	Subnets         []Subnet // one per zone, in zone order
	SecurityGroupID string
	// AMIs by architecture (amd64, arm64), as the public SSM parameters
	// name them for the cluster's Kubernetes version.
	AMIs             map[string]string
	Parameters       map[string]string // public SSM parameter -> value
	TableName        string
	QueueURL, DLQURL string
	QueueARN, DLQARN string
	// The recheck queue (names.InterruptionRecheckDelay).
	RecheckQueueURL, RecheckQueueARN string
}

// seeder creates the cluster's AWS resources in moto.
type seeder struct {
	cluster, minor string
	zones          []string
	subnetPrefix   int // 0: /24
	physical       Names
	ec2            *ec2.Client
	ddb            *dynamodb.Client
	sqs            *sqs.Client
}

// seed creates the resources; the independent steps run concurrently (each
// fills its own fields of the result).
func (s *seeder) seed(ctx context.Context) (*AWSResources, error) {
	res := &AWSResources{AMIs: map[string]string{}, Parameters: map[string]string{}}
	steps := []struct {
		name string
		fn   func(context.Context, *AWSResources) error
	}{
		{"network", s.network},
		{"amis", s.amis},
		{"table", s.table},
		{"queues", s.queues},
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := st.fn(ctx, res); err != nil {
				errs[i] = fmt.Errorf("seed %s: %w", st.name, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return res, nil
}

func (s *seeder) tags(rt ec2types.ResourceType, name string, extra ...ec2types.Tag) []ec2types.TagSpecification {
	tags := append([]ec2types.Tag{
		{Key: aws.String("Name"), Value: aws.String(name)},
		{Key: aws.String(s.physical.DiscoveryTag), Value: aws.String(s.cluster)},
		{Key: aws.String(names.TagKeyCluster(s.cluster)), Value: aws.String("shared")},
	}, extra...)
	return []ec2types.TagSpecification{{ResourceType: rt, Tags: tags}}
}

func (s *seeder) network(ctx context.Context, res *AWSResources) error {
	vpc, err := s.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16"), TagSpecifications: s.tags(ec2types.ResourceTypeVpc, s.cluster+"-vpc")})
	if err != nil {
		return err
	}
	res.VPCID = aws.ToString(vpc.Vpc.VpcId)
	for i, z := range s.zones {
		cidr := fmt.Sprintf("10.0.%d.0/24", i+1)
		if s.subnetPrefix > 0 && s.subnetPrefix < 24 {
			// Room for thousands of instances a zone: 10.0.16.0/20, 10.0.32.0/20, ...
			cidr = fmt.Sprintf("10.0.%d.0/%d", (i+1)<<(24-s.subnetPrefix), s.subnetPrefix)
		}
		sn, err := s.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{
			VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String(cidr), AvailabilityZone: aws.String(z),
			TagSpecifications: s.tags(ec2types.ResourceTypeSubnet, s.cluster+"-private-"+z,
				ec2types.Tag{Key: aws.String("kubernetes.io/role/internal-elb"), Value: aws.String("1")}),
		})
		if err != nil {
			return fmt.Errorf("subnet %s: %w", z, err)
		}
		res.Subnets = append(res.Subnets, Subnet{ID: aws.ToString(sn.Subnet.SubnetId), Zone: z, CIDR: cidr})
	}
	sg, err := s.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(s.cluster + "-node"), Description: aws.String("Nodewright nodes of " + s.cluster),
		VpcId: vpc.Vpc.VpcId, TagSpecifications: s.tags(ec2types.ResourceTypeSecurityGroup, s.cluster+"-node"),
	})
	if err != nil {
		return fmt.Errorf("security group: %w", err)
	}
	res.SecurityGroupID = aws.ToString(sg.GroupId)
	return nil
}

// amis picks an Amazon Linux 2023 image per architecture from moto's
// built-in images and publishes it under the public SSM parameters that
// the al2023@latest, al2@latest, bottlerocket@latest and Windows aliases
// resolve through.
func (s *seeder) amis(ctx context.Context, res *AWSResources) error {
	arches := []struct{ ec2Arch, kubeArch string }{{"x86_64", "amd64"}, {"arm64", "arm64"}}
	ids := make([]string, len(arches))
	errs := make([]error, len(arches))
	var wg sync.WaitGroup
	for i, a := range arches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = s.al2023Image(ctx, a.ec2Arch)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, a := range arches {
		res.AMIs[a.kubeArch] = ids[i]
		for _, variant := range amiVariants(a.ec2Arch) {
			res.Parameters[AMIParameter(s.minor, a.ec2Arch, variant)] = ids[i]
		}
	}
	// Pinned releases (al2023@v...) resolve through their own parameters,
	// as every EKS AMI release publishes them.
	for _, release := range AMIReleases {
		for _, p := range fleet.AL2023Parameters(s.minor, release) {
			if id, ok := res.AMIs[p.Arch]; ok {
				res.Parameters[p.Name] = id
			}
		}
	}
	// bottlerocket@latest, al2@latest and windows20xx@latest resolve through
	// their families' public parameters; the same images stand in (the node bridge reads
	// every family's user data).
	params := append(fleet.BottlerocketParameters(s.minor, "latest"), fleet.AL2Parameters(s.minor, "latest")...)
	for _, family := range []string{"windows2019", "windows2022", "windows2025"} {
		w, err := fleet.AliasParameters(family, s.minor, "latest")
		if err != nil {
			return err
		}
		params = append(params, w...)
	}
	for _, p := range params {
		if id, ok := res.AMIs[p.Arch]; ok {
			res.Parameters[p.Name] = id
		}
	}
	return nil
}

// AMIReleases are the EKS AMI releases the local cloud publishes besides
// latest: the ones the users' examples pin (getting-started.yaml's
// al2023@v20251120).
var AMIReleases = []string{"v20251120"}

// al2023Image picks the newest non-minimal AL2023 image of the architecture
// among moto's built-in images.
func (s *seeder) al2023Image(ctx context.Context, ec2Arch string) (string, error) {
	out, err := s.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{
		Owners: []string{"amazon"},
		Filters: []ec2types.Filter{
			{Name: aws.String("name"), Values: []string{"al2023-ami-2023*"}},
			{Name: aws.String("architecture"), Values: []string{ec2Arch}},
		},
	})
	if err != nil {
		return "", err
	}
	var imgs []ec2types.Image
	for _, im := range out.Images {
		if !strings.Contains(aws.ToString(im.Name), "minimal") {
			imgs = append(imgs, im)
		}
	}
	if len(imgs) == 0 {
		return "", fmt.Errorf("moto has no al2023 %s image", ec2Arch)
	}
	sort.Slice(imgs, func(i, j int) bool { return aws.ToString(imgs[i].Name) > aws.ToString(imgs[j].Name) })
	return aws.ToString(imgs[0].ImageId), nil
}

// amiVariants are the AL2023 EKS AMI variants published per architecture.
func amiVariants(ec2Arch string) []string {
	if ec2Arch == "x86_64" {
		return []string{"standard", "nvidia", "neuron"}
	}
	return []string{"standard", "nvidia"}
}

// AMIParameter is the public SSM parameter of the recommended EKS AL2023
// AMI: /aws/service/eks/optimized-ami/<minor>/amazon-linux-2023/<arch>/<variant>/recommended/image_id.
func AMIParameter(minor, ec2Arch, variant string) string {
	return "/aws/service/eks/optimized-ami/" + minor + "/amazon-linux-2023/" + ec2Arch + "/" + variant + "/recommended/image_id"
}

// table creates the state table with the schema of shared/names: string
// keys, the TTL attribute, and the two sparse indexes the flows query.
func (s *seeder) table(ctx context.Context, res *AWSResources) error {
	str := ddbtypes.ScalarAttributeTypeS
	attr := func(name string) ddbtypes.AttributeDefinition {
		return ddbtypes.AttributeDefinition{AttributeName: aws.String(name), AttributeType: str}
	}
	key := func(name string, kt ddbtypes.KeyType) ddbtypes.KeySchemaElement {
		return ddbtypes.KeySchemaElement{AttributeName: aws.String(name), KeyType: kt}
	}
	all := &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll}
	table := s.physical.Table
	_, err := s.ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			attr(names.PartitionKey), attr(names.SortKey), attr(names.InstanceIDAttribute), attr(names.NodePoolAttribute),
		},
		KeySchema: []ddbtypes.KeySchemaElement{key(names.PartitionKey, ddbtypes.KeyTypeHash), key(names.SortKey, ddbtypes.KeyTypeRange)},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{
			{
				IndexName:  aws.String(names.IndexByInstanceID),
				KeySchema:  []ddbtypes.KeySchemaElement{key(names.InstanceIDAttribute, ddbtypes.KeyTypeHash)},
				Projection: all,
			},
			{
				IndexName: aws.String(names.IndexByNodePool),
				KeySchema: []ddbtypes.KeySchemaElement{
					key(names.NodePoolAttribute, ddbtypes.KeyTypeHash), key(names.IndexByNodePoolSortKey, ddbtypes.KeyTypeRange),
				},
				Projection: all,
			},
		},
		SSESpecification: &ddbtypes.SSESpecification{Enabled: aws.Bool(true)},
	})
	if err != nil {
		return err
	}
	_, err = s.ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(names.TTLAttribute), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("ttl: %w", err)
	}
	res.TableName = table
	return nil
}

// queues creates the interruption queue, its recheck queue and their DLQ
// with the attributes the stack synthesizes (infra/queueattrs' golden
// file, which a test of the stack keeps equal to the template), the
// redrive policies pointing at the DLQ created here.
func (s *seeder) queues(ctx context.Context, res *AWSResources) error {
	golden, err := queueattrs.Golden()
	if err != nil {
		return err
	}
	res.DLQURL, res.DLQARN, err = s.queue(ctx, s.physical.InterruptionDLQ, maps.Clone(golden.DLQ))
	if err != nil {
		return err
	}
	redrive, err := json.Marshal(map[string]any{"deadLetterTargetArn": res.DLQARN, "maxReceiveCount": golden.MaxReceiveCount})
	if err != nil {
		return err
	}
	attrs := maps.Clone(golden.Queue)
	attrs["RedrivePolicy"] = string(redrive)
	res.QueueURL, res.QueueARN, err = s.queue(ctx, s.physical.InterruptionQueue, attrs)
	if err != nil {
		return err
	}
	attrs = maps.Clone(golden.Recheck)
	attrs["RedrivePolicy"] = string(redrive)
	res.RecheckQueueURL, res.RecheckQueueARN, err = s.queue(ctx, s.physical.RecheckQueue, attrs)
	return err
}

func (s *seeder) queue(ctx context.Context, name string, attrs map[string]string) (string, string, error) {
	q, err := s.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", "", fmt.Errorf("queue %s: %w", name, err)
	}
	a, err := s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", "", fmt.Errorf("queue %s: %w", name, err)
	}
	return aws.ToString(q.QueueUrl), a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}
