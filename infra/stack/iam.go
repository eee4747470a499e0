package stack

import (
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awseks"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/names"
)

// NodeManagedPolicies are the AWS-managed policies of the node role, as EKS
// requires for worker nodes: join the cluster, run the VPC CNI, pull images
// from ECR, and be reachable by SSM Session Manager instead of SSH.
func NodeManagedPolicies() []string {
	return []string{
		"AmazonEKSWorkerNodePolicy",
		"AmazonEKS_CNI_Policy",
		"AmazonEC2ContainerRegistryPullOnly",
		"AmazonSSMManagedInstanceCore",
	}
}

// addNodeRole creates (or imports) the role of launched nodes and an
// instance profile for it. The functions launch every instance with this
// profile and may pass no other role.
func (s *Stack) addNodeRole() {
	if s.props.ImportNodeRole {
		s.nodeRole = awsiam.Role_FromRoleName(s.Stack, jsii.String("NodeRole"), jsii.String(s.props.NodeRoleName), nil)
	} else {
		var policies []awsiam.IManagedPolicy
		for _, p := range NodeManagedPolicies() {
			policies = append(policies, awsiam.ManagedPolicy_FromAwsManagedPolicyName(jsii.String(p)))
		}
		s.nodeRole = awsiam.NewRole(s.Stack, jsii.String("NodeRole"), &awsiam.RoleProps{
			RoleName:        jsii.String(s.props.NodeRoleName),
			AssumedBy:       awsiam.NewServicePrincipal(jsii.String("ec2.amazonaws.com"), nil),
			ManagedPolicies: &policies,
			Description:     jsii.String("Nodes Nodewright launches for EKS cluster " + s.props.ClusterName),
		})
	}
	profile := awsiam.NewInstanceProfile(s.Stack, jsii.String("NodeInstanceProfile"), &awsiam.InstanceProfileProps{Role: s.nodeRole})
	s.instanceProfileName = profile.InstanceProfileName()
}

// ec2 returns an EC2 ARN pattern in this region for any account (as
// Karpenter's policy writes them: image and snapshot ARNs have no account).
func (s *Stack) ec2(resource string) *string {
	if resource == "image/*" || resource == "snapshot/*" {
		return jsii.String(s.arn("ec2", "", resource))
	}
	return jsii.String(s.arn("ec2", "*", resource))
}

// ControllerStatementIDs are the Sids of the controller policy, in order.
func ControllerStatementIDs() []string {
	return []string{
		"AllowScopedEC2InstanceAccessActions",
		"AllowScopedEC2LaunchTemplateAccessActions",
		"AllowScopedEC2InstanceActionsWithTags",
		"AllowScopedResourceCreationTagging",
		"AllowScopedNodeClaimTagging",
		"AllowScopedDeletion",
		"AllowRegionalReadActions",
		"AllowSSMReadActions",
		"AllowPricingReadActions",
		"AllowPassingInstanceRole",
		"AllowAPIServerEndpointDiscovery",
		"AllowStateTableAccess",
	}
}

// addControllerPolicy creates the policy the three controller functions
// share, modelled on Karpenter's controller policy: resources are created
// only with this cluster's tags in the request, deleted only when they carry
// them, and tagged only as part of their creation.
func (s *Stack) addControllerPolicy() {
	cluster := s.props.ClusterName
	requestTags := map[string]any{
		"StringEquals": map[string]any{
			"aws:RequestTag/" + s.clusterTag():             names.TagValueOwned,
			"aws:RequestTag/" + names.TagKeyEKSClusterName: cluster,
		},
		"StringLike": map[string]any{"aws:RequestTag/" + names.TagKeyNodePool: "*"},
	}
	resourceTags := map[string]any{
		"StringEquals": map[string]any{"aws:ResourceTag/" + s.clusterTag(): names.TagValueOwned},
		"StringLike":   map[string]any{"aws:ResourceTag/" + names.TagKeyNodePool: "*"},
	}
	creationTagging := map[string]any{
		"StringEquals": map[string]any{
			"aws:RequestTag/" + s.clusterTag():             names.TagValueOwned,
			"aws:RequestTag/" + names.TagKeyEKSClusterName: cluster,
			"ec2:CreateAction":                             []string{"RunInstances", "CreateFleet", "CreateLaunchTemplate"},
		},
		"StringLike": map[string]any{"aws:RequestTag/" + names.TagKeyNodePool: "*"},
	}
	created := []*string{s.ec2("fleet/*"), s.ec2("instance/*"), s.ec2("volume/*"), s.ec2("network-interface/*"),
		s.ec2("launch-template/*"), s.ec2("spot-instances-request/*")}
	stmt := func(sid string, actions []string, resources []*string, cond map[string]any) awsiam.PolicyStatement {
		props := &awsiam.PolicyStatementProps{Sid: jsii.String(sid), Actions: jsii.Strings(actions...), Resources: &resources}
		if cond != nil {
			props.Conditions = &cond
		}
		return awsiam.NewPolicyStatement(props)
	}
	statements := []awsiam.PolicyStatement{
		stmt("AllowScopedEC2InstanceAccessActions", []string{"ec2:RunInstances", "ec2:CreateFleet"},
			[]*string{s.ec2("image/*"), s.ec2("snapshot/*"), s.ec2("security-group/*"), s.ec2("subnet/*"), s.ec2("capacity-reservation/*"),
				s.ec2("placement-group/*")}, nil), // a class's placementGroupSelector: RunInstances authorizes the group

		stmt("AllowScopedEC2LaunchTemplateAccessActions", []string{"ec2:RunInstances", "ec2:CreateFleet"},
			[]*string{s.ec2("launch-template/*")}, resourceTags),
		stmt("AllowScopedEC2InstanceActionsWithTags", []string{"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"},
			created, requestTags),
		stmt("AllowScopedResourceCreationTagging", []string{"ec2:CreateTags"}, created, creationTagging),
		// A group of identical NodeClaims launches in one fleet; each instance
		// is then tagged with its own NodeClaim (only those two keys, only on
		// this cluster's instances), as Karpenter's policy allows.
		stmt("AllowScopedNodeClaimTagging", []string{"ec2:CreateTags"}, []*string{s.ec2("instance/*")}, map[string]any{
			"StringEquals":              map[string]any{"aws:ResourceTag/" + s.clusterTag(): names.TagValueOwned},
			"StringLike":                map[string]any{"aws:ResourceTag/" + names.TagKeyNodePool: "*"},
			"ForAllValues:StringEquals": map[string]any{"aws:TagKeys": []string{names.TagKeyNodeClaim, names.TagKeyName}},
		}),
		stmt("AllowScopedDeletion", []string{"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"},
			[]*string{s.ec2("instance/*"), s.ec2("launch-template/*")}, resourceTags),
		stmt("AllowRegionalReadActions", []string{
			"ec2:DescribeAvailabilityZones", "ec2:DescribeCapacityReservations", "ec2:DescribeImages",
			"ec2:DescribeInstances", "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
			"ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups", "ec2:DescribeSpotPriceHistory",
			"ec2:DescribeSubnets",
		}, []*string{jsii.String("*")}, map[string]any{
			"StringEquals": map[string]any{"aws:RequestedRegion": s.Region()},
		}),
		// shared/fleet resolves AMI aliases with one GetParameters call
		// (the plural action: GetParameter would not cover it): the public
		// parameters, and exactly the parameters EC2NodeClasses name in
		// amiSelectorTerms[].ssmParameter (the deployed ones, and those
		// listed for classes applied to the cluster later).
		stmt("AllowSSMReadActions", []string{"ssm:GetParameters"}, s.ssmParameterResources(), nil),
		stmt("AllowPricingReadActions", []string{"pricing:GetProducts"}, []*string{jsii.String("*")}, nil),
		stmt("AllowPassingInstanceRole", []string{"iam:PassRole"}, []*string{s.nodeRole.RoleArn()}, map[string]any{
			"StringEquals": map[string]any{"iam:PassedToService": "ec2.amazonaws.com"},
		}),
		stmt("AllowAPIServerEndpointDiscovery", []string{"eks:DescribeCluster"},
			[]*string{jsii.String(s.arn("eks", *s.Account(), "cluster/"+cluster))}, nil),
		stmt("AllowStateTableAccess", []string{
			"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:PutItem",
			"dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
			"dynamodb:ConditionCheckItem", "dynamodb:DescribeTable",
		}, []*string{s.table.TableArn(), jsii.String(*s.table.TableArn() + "/index/*")}, nil),
	}
	roles := []awsiam.IRole{s.roles[FnProvision], s.roles[FnInterruption], s.roles[FnConsolidation]}
	s.controllerPolicy = awsiam.NewManagedPolicy(s.Stack, jsii.String("ControllerPolicy"), &awsiam.ManagedPolicyProps{
		Description: jsii.String("Nodewright controller functions (" + cluster + "): launch, tag and terminate this cluster's instances"),
		Statements:  &statements,
		Roles:       &roles,
	})
}

// addAccessEntries maps the node role (EC2_LINUX) and the controller
// functions' roles (the group the RBAC manifest binds) into the cluster. The
// cluster's authentication mode must be API or API_AND_CONFIG_MAP.
func (s *Stack) addAccessEntries() {
	if s.props.SkipAccessEntries {
		return
	}
	if !s.props.ImportNodeRole {
		awseks.NewCfnAccessEntry(s.Stack, jsii.String("NodeAccessEntry"), &awseks.CfnAccessEntryProps{
			ClusterName:  jsii.String(s.props.ClusterName),
			PrincipalArn: s.nodeRole.RoleArn(),
			Type:         jsii.String("EC2_LINUX"),
		})
	}
	for _, fn := range []string{FnProvision, FnInterruption, FnConsolidation} {
		awseks.NewCfnAccessEntry(s.Stack, jsii.String(title(fn)+"AccessEntry"), &awseks.CfnAccessEntryProps{
			ClusterName:      jsii.String(s.props.ClusterName),
			PrincipalArn:     s.roles[fn].RoleArn(),
			Type:             jsii.String("STANDARD"),
			Username:         jsii.String(names.KubernetesUsernamePrefix + fn),
			KubernetesGroups: jsii.Strings(names.KubernetesGroup),
		})
	}
}

// PublicParametersPath is the SSM path of AWS's public parameters (the AMI
// aliases resolve there); the functions may read all of it.
const PublicParametersPath = "/aws/service/"

// SSMParameterNames are the SSM parameters outside PublicParametersPath
// that the functions may read: every amiSelectorTerms[].ssmParameter of the
// configuration's EC2NodeClasses, and extra (Props.SSMParameters), sorted
// and without duplicates.
func SSMParameterNames(cfg *apis.Config, extra []string) []string {
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !strings.HasPrefix(name, PublicParametersPath) {
			seen[name] = true
		}
	}
	if cfg != nil {
		for _, nc := range cfg.NodeClasses {
			for _, t := range nc.Spec.AMISelectorTerms {
				add(t.SSMParameter)
			}
		}
	}
	for _, name := range extra {
		add(name)
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ssmParameterResources are the SSM statement's resources: the public
// parameters (any account: AWS owns them) and each named parameter of this
// account and region (a name given as an ARN is kept as it is: a parameter
// shared from another account).
func (s *Stack) ssmParameterResources() []*string {
	out := []*string{jsii.String(s.arn("ssm", "", "parameter"+PublicParametersPath+"*"))}
	for _, name := range SSMParameterNames(s.props.Config, s.props.SSMParameters) {
		if strings.HasPrefix(name, "arn:") {
			out = append(out, jsii.String(name))
			continue
		}
		// A parameter's ARN is parameter/ then its name without the
		// leading slash of a hierarchical name.
		out = append(out, jsii.String(s.arn("ssm", *s.Account(), "parameter/"+strings.TrimPrefix(name, "/"))))
	}
	return out
}
