package stack

import (
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// suppression is one deliberate cdk-nag finding with its reason.
type suppression struct {
	id, reason string
	appliesTo  []any
}

func (s suppression) nag() *cdknag.NagPackSuppression {
	out := &cdknag.NagPackSuppression{Id: jsii.String(s.id), Reason: jsii.String(s.reason)}
	if len(s.appliesTo) > 0 {
		out.AppliesTo = &s.appliesTo
	}
	return out
}

func regex(re string) any { return &cdknag.RegexAppliesTo{Regex: jsii.String(re)} }

// addNagSuppressions records the cdk-nag AwsSolutions findings that are
// deliberate, each with the reason it is acceptable. Everything else must
// pass: the tests fail on any unsuppressed finding.
func (s *Stack) addNagSuppressions() {
	add := func(construct any, sups ...suppression) {
		var list []*cdknag.NagPackSuppression
		for _, sup := range sups {
			list = append(list, sup.nag())
		}
		cdknag.NagSuppressions_AddResourceSuppressions(construct, &list, jsii.Bool(true))
	}
	add(s.controllerPolicy,
		suppression{"AwsSolutions-IAM5",
			"EC2 resource IDs (instances, volumes, ENIs, fleets, launch templates, spot requests) are unknown until created: " +
				"creation is allowed only with this cluster's tags in the request (aws:RequestTag/kubernetes.io/cluster/<name>=owned, " +
				"eks:eks-cluster-name, karpenter.sh/nodepool), tagging only as part of those creations (ec2:CreateAction), " +
				"and deletion only of resources carrying the tags (aws:ResourceTag), as in Karpenter's controller policy; " +
				"images, snapshots, subnets, security groups and capacity reservations are chosen at run time from the EC2NodeClass selectors",
			[]any{regex(`/^Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:(\*)?:[a-z-]+\/\*$/`)}},
		suppression{"AwsSolutions-IAM5",
			"EC2 Describe* calls and pricing:GetProducts support no resource-level permissions; the Describe calls are limited to this region (aws:RequestedRegion)",
			[]any{"Resource::*"}},
		suppression{"AwsSolutions-IAM5",
			"the public EKS AMI parameters (/aws/service/eks/optimized-ami/..., /aws/service/bottlerocket/..., /aws/service/ami-windows-latest/...) are selected at run time from each EC2NodeClass's amiSelectorTerms alias",
			[]any{"Resource::arn:<AWS::Partition>:ssm:<AWS::Region>::parameter/aws/service/*"}},
		suppression{"AwsSolutions-IAM5",
			"the functions query the state table's own global secondary indexes (by instance ID, by NodePool); the wildcard covers only this table's indexes",
			[]any{regex(`/^Resource::<State[0-9A-F]+\.Arn>\/index\/\*$/`)}},
	)
	if !s.props.ImportNodeRole {
		add(s.nodeRole,
			suppression{"AwsSolutions-IAM4",
				"EKS worker nodes need these AWS-managed policies (join the cluster, VPC CNI, ECR image pulls, SSM Session Manager); " +
					"they are what EKS documents for node roles and AWS keeps them current as EKS evolves",
				[]any{regex(`/^Policy::arn:<AWS::Partition>:iam::aws:policy\/(AmazonEKSWorkerNodePolicy|AmazonEKS_CNI_Policy|AmazonEC2ContainerRegistryPullOnly|AmazonSSMManagedInstanceCore)$/`)}},
		)
	}
	if s.props.Network != nil {
		for _, fn := range []string{FnProvision, FnInterruption, FnConsolidation} {
			add(s.roles[fn], suppression{"AwsSolutions-IAM5",
				"Lambda creates and deletes the function's VPC network interfaces through its role; these EC2 network interface " +
					"actions are what AWSLambdaVPCAccessExecutionRole grants, on resources Lambda names at run time",
				[]any{"Resource::*"}})
		}
	}
}
