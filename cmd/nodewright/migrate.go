package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/scheduling"
)

const migrateUsage = `Usage: nodewright migrate -cluster CLUSTER [-f SNAPSHOT]... [flags]

Reads the node groups Cluster Autoscaler scales today (the cluster's EKS
managed node groups, and the Auto Scaling groups tagged
k8s.io/cluster-autoscaler/enabled and k8s.io/cluster-autoscaler/CLUSTER) and
prints, as YAML, NodePools and EC2NodeClasses that launch the same instance
types and capacity types, with the same labels and taints, into the same
subnets and security groups: one NodePool per group, its cpu limit the
group's maximum size times its largest type's vCPUs. What cannot be carried
over is a "# warning:" comment at the top. Check the output with
'nodewright validate', then apply it.

With a snapshot of the cluster (-f, as for 'nodewright plan'), it adds, as
comments, today's nodes and their price per hour beside the plan
Nodewright would make for today's pods with these NodePools.

Nodes of managed node groups and Auto Scaling groups are never disrupted by
Nodewright: it acts only on the nodes it launched.

Flags:
`

// migrateFlags are the migrate command's options.
type migrateFlags struct {
	target targetFlags
	role   string
	files  []string
}

// migrateDeps reach AWS (stand-ins in tests; zero: the SDK's clients).
type migrateDeps struct {
	open func(ctx context.Context, tf *targetFlags) (nodeGroupAPIs, error)
}

func openNodeGroupAPIs(ctx context.Context, tf *targetFlags) (nodeGroupAPIs, error) {
	cfg, err := awsConfig(ctx, tf)
	if err != nil {
		return nodeGroupAPIs{}, err
	}
	return nodeGroupAPIs{EKS: eks.NewFromConfig(cfg), ASG: autoscaling.NewFromConfig(cfg), EC2: ec2.NewFromConfig(cfg), Region: cfg.Region}, nil
}

// migrate runs `nodewright migrate`.
func (c cli) migrate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	mf := &migrateFlags{}
	fs := flag.NewFlagSet("nodewright migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), migrateUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&mf.target.cluster, "cluster", "", "the EKS `CLUSTER` name")
	fs.StringVar(&mf.target.region, "region", "", "AWS `REGION` (default: the AWS configuration's)")
	fs.StringVar(&mf.target.endpoint, "endpoint-url", "", "send AWS calls to `URL` (default: $AWS_ENDPOINT_URL, else AWS)")
	fs.StringVar(&mf.target.profile, "profile", "", "AWS shared-config `PROFILE` (default: $AWS_PROFILE)")
	fs.DurationVar(&mf.target.timeout, "timeout", time.Minute, "give up after this long")
	fs.StringVar(&mf.role, "role", "", "the node `ROLE` every EC2NodeClass names (default KarpenterNodeRole-CLUSTER, the stack's default)")
	fs.Var(fileList{&mf.files}, "f", "snapshot `FILE` of the cluster, for the price comparison (repeatable; - reads stdin)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return exitOK
	} else if err != nil {
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "nodewright migrate: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	case mf.target.cluster == "":
		fmt.Fprintln(stderr, "nodewright migrate: which cluster? pass -cluster NAME (the EKS cluster's name)")
		return exitUsage
	}
	if mf.role == "" {
		mf.role = "KarpenterNodeRole-" + mf.target.cluster
	}
	ctx, cancel := context.WithTimeout(context.Background(), mf.target.timeout)
	defer cancel()
	open := c.migration.open
	if open == nil {
		open = openNodeGroupAPIs
	}
	api, err := open(ctx, &mf.target)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright migrate: %v\n", err)
		return exitError
	}
	groups, warns, err := readNodeGroups(ctx, api, mf.target.cluster)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright migrate: %v (check -cluster, -region and your credentials' eks:ListNodegroups, eks:DescribeNodegroup, "+
			"autoscaling:DescribeAutoScalingGroups and ec2:DescribeLaunchTemplateVersions permissions)\n", err)
		return exitError
	}
	if len(groups) == 0 {
		fmt.Fprintf(stderr, "nodewright migrate: cluster %s has no managed node group and no Auto Scaling group tagged %s and %s%s\n",
			mf.target.cluster, caEnabledTag, caClusterTag, mf.target.cluster)
		return exitError
	}
	cat := catalog.Default()
	m := migrate(groups, mf.target.cluster, mf.role, cat)
	m.Warnings = append(warns, m.Warnings...)
	if len(mf.files) > 0 {
		snap, err := readSnapshot(mf.files, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "nodewright migrate: bad snapshot:\n%s\n", indent(err.Error()))
			return exitError
		}
		cmp, err := c.compare(snap.Nodes, snap.Pending, snap.DaemonSets, m, cat, api.Region)
		if err != nil {
			fmt.Fprintf(stderr, "nodewright migrate: %v\n", err)
			return exitError
		}
		fmt.Fprint(stdout, cmp)
	}
	if err := m.writeYAML(stdout); err != nil {
		fmt.Fprintf(stderr, "nodewright migrate: %v\n", err)
		return exitError
	}
	return exitOK
}

// compare prices today's nodes and the plan for today's pods (every pod
// bound to a node, and the pending ones, placed afresh) with the migrated
// NodePools, and says both as YAML comments.
func (c cli) compare(nodes []*scheduling.Node, pending []*corev1.Pod, ds []*appsv1.DaemonSet, m *migration, cat *catalog.Catalog, region string) (string, error) {
	spot := pricing.Model{Catalog: cat, Seed: 0}
	today, priced := 0.0, 0
	var pods []*corev1.Pod
	for _, n := range nodes {
		it, ok := cat.Get(n.Node.Labels[apis.LabelInstanceType])
		if ok {
			priced++
			price := it.OnDemandPrice
			if nodeCapacityType(n.Node) == apis.CapacityTypeSpot {
				if p, ok := spot.SpotPrice(it.Name, n.Node.Labels[apis.LabelZone]); ok {
					price = p
				}
			}
			today += price
		}
		for _, p := range n.Pods {
			if podstate.FollowsNode(p) || !podstate.Active(p) {
				continue
			}
			p = p.DeepCopy()
			p.Spec.NodeName = ""
			pods = append(pods, p)
		}
	}
	pods = append(pods, pending...)
	in := scheduling.Input{Pods: pods, NodePools: m.NodePools, NodeClasses: m.NodeClasses, DaemonSets: ds,
		InstanceTypes: cat.Types(), MaxInstanceTypes: scheduling.DefaultMaxInstanceTypes, Spot: spot,
		Zones: []string{region + "a", region + "b", region + "c"}}
	res, err := c.solve(in)
	if err != nil {
		return "", fmt.Errorf("plan today's pods: %w", err)
	}
	round := func(v float64) float64 { return math.Round(v*1e4) / 1e4 }
	out := fmt.Sprintf("# today: %d nodes (%d of known types), $%.4f/h\n", len(nodes), priced, round(today))
	out += fmt.Sprintf("# Nodewright's plan for today's %d pods with these NodePools: %d nodes, $%.4f/h (lower bound $%.4f/h); %d pods unschedulable\n",
		len(pods), len(res.NodeClaims), res.PricePerHour, res.LowerBoundPricePerHour, len(res.Unschedulable))
	return out, nil
}

// nodeCapacityType reads a node's capacity type from Karpenter's or EKS's
// label (on-demand when neither says).
func nodeCapacityType(n *corev1.Node) string {
	if ct := n.Labels[apis.LabelCapacityType]; ct != "" {
		return ct
	}
	if n.Labels["eks.amazonaws.com/capacityType"] == "SPOT" {
		return apis.CapacityTypeSpot
	}
	return apis.CapacityTypeOnDemand
}
