package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/names"
)

// Running is an instance that carries this cluster's ownership tag (and
// so may be Nodewright's), as garbage collection and liveness see it.
type Running struct {
	InstanceID   string
	InstanceType string
	Zone         string
	State        string // pending, running, stopping, stopped, shutting-down
	LaunchTime   time.Time
	// NodeClaim and NodePool are the instance's karpenter.sh tags ("" when
	// absent: not launched by Nodewright or Karpenter).
	NodeClaim string
	NodePool  string
	// ManagedBy: the instance carries Nodewright's managed-by tag.
	ManagedBy bool
	// CapacityType is spot or on-demand (the instance's lifecycle), or
	// reserved when it was launched into a reservation;
	// ImageID its AMI.
	CapacityType string
	ImageID      string
	// SubnetID and SecurityGroups are the instance's network placement
	// (subnet and security group drift).
	SubnetID       string
	SecurityGroups []string
	// PlacementGroupID is the instance's placement group ("": none).
	PlacementGroupID string
}

// Instances lists the instances tagged kubernetes.io/cluster/<cluster>:
// owned that have not terminated, sorted by ID.
func (l *Launcher) Instances(ctx context.Context) ([]Running, error) {
	in := &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + names.TagKeyCluster(l.cfg.Cluster.Name)), Values: []string{names.TagValueOwned}},
			{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped", "shutting-down"}},
		},
		MaxResults: aws.Int32(1000),
	}
	var out []Running
	for {
		page, err := l.cfg.EC2.DescribeInstances(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describe instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				run := Running{InstanceID: aws.ToString(i.InstanceId), InstanceType: string(i.InstanceType), LaunchTime: aws.ToTime(i.LaunchTime),
					CapacityType: apis.CapacityTypeOnDemand, ImageID: aws.ToString(i.ImageId), SubnetID: aws.ToString(i.SubnetId)}
				for _, g := range i.SecurityGroups {
					run.SecurityGroups = append(run.SecurityGroups, aws.ToString(g.GroupId))
				}
				sort.Strings(run.SecurityGroups)
				if i.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
					run.CapacityType = apis.CapacityTypeSpot
				}
				if launchedIntoReservation(i) {
					run.CapacityType = apis.CapacityTypeReserved
				}
				if i.Placement != nil {
					run.Zone = aws.ToString(i.Placement.AvailabilityZone)
					run.PlacementGroupID = aws.ToString(i.Placement.GroupId)
				}
				if i.State != nil {
					run.State = string(i.State.Name)
				}
				for _, t := range i.Tags {
					switch aws.ToString(t.Key) {
					case names.TagKeyNodeClaim:
						run.NodeClaim = aws.ToString(t.Value)
					case names.TagKeyNodePool:
						run.NodePool = aws.ToString(t.Value)
					case names.TagKeyManagedBy:
						run.ManagedBy = aws.ToString(t.Value) == names.TagValueManagedBy
					}
				}
				out = append(out, run)
			}
		}
		if aws.ToString(page.NextToken) == "" {
			break
		}
		in.NextToken = page.NextToken
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InstanceID < out[j].InstanceID })
	return out, nil
}

// NodeName is the name the instance's Node takes (or took) in the cluster:
// its private DNS name, as EKS names nodes. EC2 still describes an
// instance for a while after it terminated, so this finds the Node of an
// instance that went before Nodewright saw it register.
func (l *Launcher) NodeName(ctx context.Context, instanceID string) (string, error) {
	out, err := l.cfg.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instanceID}})
	if err != nil {
		return "", fmt.Errorf("describe instance %s: %w", instanceID, err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if aws.ToString(i.InstanceId) == instanceID && aws.ToString(i.PrivateDnsName) != "" {
				return aws.ToString(i.PrivateDnsName), nil
			}
		}
	}
	return "", fmt.Errorf("instance %s: no private DNS name", instanceID)
}

// Terminate terminates instances (in batches EC2 accepts); instances that
// no longer exist are not an error.
func (l *Launcher) Terminate(ctx context.Context, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), 500)
		batch := ids[:n]
		ids = ids[n:]
		_, err := l.cfg.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: batch})
		if err != nil && hasCode(err, "InvalidInstanceID.NotFound") && len(batch) > 1 {
			// One unknown ID fails the batch: terminate one at a time.
			var errs []error
			for _, id := range batch {
				errs = append(errs, l.Terminate(ctx, []string{id}))
			}
			err = errors.Join(errs...)
		} else if err != nil && hasCode(err, "InvalidInstanceID.NotFound") {
			err = nil
		}
		if err != nil {
			return fmt.Errorf("terminate instances %v: %w", batch, err)
		}
		l.cfg.Log.Info("instances terminated", "instances", batch)
	}
	return nil
}

// TagNodeClaim tags a group-launched instance with the NodeClaim it was
// assigned to (the tag its fleet gave it names the group's first claim).
func (l *Launcher) TagNodeClaim(ctx context.Context, instanceID, nodePool, nodeClaim string) error {
	_, err := l.cfg.EC2.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: []string{instanceID},
		Tags: []ec2types.Tag{
			{Key: aws.String(names.TagKeyNodeClaim), Value: aws.String(nodeClaim)},
			{Key: aws.String(names.TagKeyName), Value: aws.String(nodePool + "/" + nodeClaim)},
		},
	})
	if err != nil {
		return fmt.Errorf("tag instance %s with nodeclaim %s: %w", instanceID, nodeClaim, err)
	}
	return nil
}

// CurrentImages resolves the EC2NodeClass's AMIs now, bypassing the cache
// (drift detection: a node whose image is not among them has drifted).
// When they differ from the cached resolution, the cache entry is dropped:
// a replacement for a drifted node must launch the new image, not the one
// it replaces.
func (l *Launcher) CurrentImages(ctx context.Context, nc *apis.EC2NodeClass) ([]string, error) {
	amis, err := l.amis(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("resolve AMIs of EC2NodeClass %s: %w", nc.Name, err)
	}
	out := imageIDs(amis)
	key := nc.Name + "/" + nc.Hash()
	if cached, ok := l.classes.peek(key, l.cfg.Now()); ok && !slices.Equal(imageIDs(cached.AMIs), out) {
		l.classes.forgetKey(key)
	}
	return out, nil
}

// imageIDs are the AMIs' IDs, sorted.
func imageIDs(amis []AMI) []string {
	out := make([]string, 0, len(amis))
	for _, a := range amis {
		out = append(out, a.ID)
	}
	sort.Strings(out)
	return out
}
