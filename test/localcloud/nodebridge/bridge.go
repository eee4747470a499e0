// Package nodebridge turns the local cloud's EC2 instances into Kubernetes
// Nodes, as an instance's kubelet would on EKS: an instance that carries the
// cluster tag (kubernetes.io/cluster/<cluster>) and is running registers
// after a boot delay, named by its private DNS name, with providerID
// aws:///<zone>/<instance-id>, the labels and taints its user data passes to
// the kubelet, and capacity from the instance catalog; kwok (which manages
// nodes carrying the kwok annotation) keeps it Ready and runs its pods. A
// node whose instance stops or terminates is deleted.
//
// The bridge polls DescribeInstances (every Interval) rather than hooking
// the AWS front, so it sees every instance moto has, however launched.
package nodebridge

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// deprecatedAliases maps the stable labels a real node also carries under
// their deprecated names to those names.
var deprecatedAliases = map[string]string{
	corev1.LabelArchStable:         "beta.kubernetes.io/arch",
	corev1.LabelOSStable:           "beta.kubernetes.io/os",
	corev1.LabelInstanceTypeStable: corev1.LabelInstanceType,
	corev1.LabelTopologyZone:       corev1.LabelFailureDomainBetaZone,
	corev1.LabelTopologyRegion:     corev1.LabelFailureDomainBetaRegion,
}

// Well-known names the bridge reads and writes.
const (
	// KwokAnnotation marks nodes kwok manages (kwok runs with
	// --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake).
	KwokAnnotation      = "kwok.x-k8s.io/node"
	KwokAnnotationValue = "fake"
	// ClusterTagPrefix + cluster name is the tag an instance needs to join.
	ClusterTagPrefix = "kubernetes.io/cluster/"
	// Tags the provision function sets on instances; carried for reference.
	TagNodePool    = "karpenter.sh/nodepool"
	TagNodeClaim   = "karpenter.sh/nodeclaim"
	TagEKSCluster  = "eks:eks-cluster-name"
	LabelCapacity  = "karpenter.sh/capacity-type"
	LabelZoneID    = "topology.k8s.aws/zone-id"
	providerPrefix = "aws:///"
)

// InstanceType is what the bridge needs to know of an instance type.
type InstanceType struct {
	Labels      map[string]string // arch, os, instance-type, karpenter.k8s.aws/instance-*
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
}

// Catalog looks up instance types; maxPods > 0 is the kubelet's pod limit
// from the user data, which changes allocatable.
type Catalog interface {
	InstanceType(name string, maxPods int32) (InstanceType, bool)
}

// EC2 is the part of the EC2 API the bridge uses.
type EC2 interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeInstanceAttribute(context.Context, *ec2.DescribeInstanceAttributeInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceAttributeOutput, error)
}

// Config configures a Bridge.
type Config struct {
	Cluster        string
	Region         string
	KubeletVersion string // e.g. v1.35.4
	BootDelay      time.Duration
	Interval       time.Duration
	EC2            EC2
	Kube           kubernetes.Interface
	Catalog        Catalog
	Now            func() time.Time
	Log            *slog.Logger
}

// Bridge registers and removes nodes.
type Bridge struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	firstSeen map[string]time.Time // instance id -> first seen running
	joined    map[string]bool      // instance id -> node created once
}

// New makes a Bridge with defaults for unset fields.
func New(cfg Config) *Bridge {
	if cfg.BootDelay == 0 {
		cfg.BootDelay = 2 * time.Second
	}
	if cfg.Interval == 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Bridge{cfg: cfg, log: cfg.Log.With("component", "nodebridge"), firstSeen: map[string]time.Time{}, joined: map[string]bool{}}
}

// Run reconciles every Interval until ctx ends.
func (b *Bridge) Run(ctx context.Context) {
	t := time.NewTicker(b.cfg.Interval)
	defer t.Stop()
	for {
		if err := b.Reconcile(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("reconcile", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Reconcile runs one pass: register instances that have booted, delete
// nodes whose instance is no longer running.
func (b *Bridge) Reconcile(ctx context.Context) error {
	insts, err := b.instances(ctx)
	if err != nil {
		return err
	}
	running := map[string]bool{}
	for _, in := range insts {
		if in.State == nil || in.State.Name != ec2types.InstanceStateNameRunning {
			continue
		}
		id := aws.ToString(in.InstanceId)
		running[id] = true
		if b.due(id) {
			if err := b.register(ctx, in); err != nil {
				b.log.Error("register node", "instance", id, "err", err)
			}
		}
	}
	return b.removeGone(ctx, running)
}

// due reports whether the instance has been running for the boot delay and
// has not joined yet; a node deleted by someone else is not re-registered.
func (b *Bridge) due(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.joined[id] {
		return false
	}
	now := b.cfg.Now()
	first, ok := b.firstSeen[id]
	if !ok {
		b.firstSeen[id] = now
		return b.cfg.BootDelay <= 0
	}
	return now.Sub(first) >= b.cfg.BootDelay
}

func (b *Bridge) instances(ctx context.Context) ([]ec2types.Instance, error) {
	in := &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{ClusterTagPrefix + b.cfg.Cluster}}}}
	var out []ec2types.Instance
	for {
		page, err := b.cfg.EC2.DescribeInstances(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describe instances: %w", err)
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// LabelNeverRegister, as a node label in an instance's user data (a
// NodePool's template label), makes the bridge never register the
// instance: a kubelet that never joins.
const LabelNeverRegister = "localcloud.nodewright.io/never-register"

func (b *Bridge) register(ctx context.Context, in ec2types.Instance) error {
	id := aws.ToString(in.InstanceId)
	attr, err := b.cfg.EC2.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: in.InstanceId, Attribute: ec2types.InstanceAttributeNameUserData})
	if err != nil {
		return fmt.Errorf("user data of %s: %w", id, err)
	}
	var ud []byte
	if attr.UserData != nil {
		ud = []byte(aws.ToString(attr.UserData.Value))
	}
	ks, err := ParseUserData(ud)
	if err != nil {
		return fmt.Errorf("instance %s: %w", id, err)
	}
	if ks.Labels[LabelNeverRegister] == "true" {
		// A kubelet that never joins (a broken AMI, a node that cannot
		// reach the API server): the fault tests of liveness inject.
		b.mu.Lock()
		b.joined[id] = true
		b.mu.Unlock()
		b.log.Info("instance will never register (fault)", "instance", id)
		return nil
	}
	node, err := b.node(in, ks)
	if err != nil {
		return err
	}
	_, err = b.cfg.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", node.Name, err)
	}
	b.mu.Lock()
	b.joined[id] = true
	b.mu.Unlock()
	b.log.Info("node registered", "node", node.Name, "instance", id, "type", in.InstanceType)
	return nil
}

// node builds the Node the instance's kubelet would register.
func (b *Bridge) node(in ec2types.Instance, ks KubeletSettings) (*corev1.Node, error) {
	id, typ := aws.ToString(in.InstanceId), string(in.InstanceType)
	it, ok := b.cfg.Catalog.InstanceType(typ, ks.MaxPods)
	if !ok {
		return nil, fmt.Errorf("instance %s: type %q not in the catalog", id, typ)
	}
	zone := ""
	if in.Placement != nil {
		zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	name := NodeName(aws.ToString(in.PrivateDnsName), aws.ToString(in.PrivateIpAddress))
	if name == "" {
		return nil, fmt.Errorf("instance %s: no private IP", id)
	}
	labels := map[string]string{}
	for k, v := range it.Labels {
		labels[k] = v
	}
	capType := "on-demand"
	if in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		capType = "spot"
	}
	labels[corev1.LabelHostname] = name
	labels[corev1.LabelTopologyZone] = zone
	labels[corev1.LabelTopologyRegion] = b.cfg.Region
	labels[LabelCapacity] = capType
	if ks.OS != "" {
		// The kubelet reports its own operating system.
		labels[corev1.LabelOSStable] = ks.OS
	}
	if zid := zoneID(zone); zid != "" {
		labels[LabelZoneID] = zid
	}
	// The kubelet (arch, os) and the cloud controller (instance type, zone,
	// region) also set the deprecated aliases, which selectors still use.
	for stable, alias := range deprecatedAliases {
		if v, ok := labels[stable]; ok {
			labels[alias] = v
		}
	}
	for k, v := range ks.Labels {
		labels[k] = v
	}
	capacity, alloc := it.Capacity.DeepCopy(), it.Allocatable.DeepCopy()
	ip := aws.ToString(in.PrivateIpAddress)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: labels,
			Annotations: map[string]string{
				KwokAnnotation:                         KwokAnnotationValue,
				"alpha.kubernetes.io/provided-node-ip": ip,
				"node.alpha.kubernetes.io/ttl":         "0",
			},
		},
		Spec: corev1.NodeSpec{ProviderID: providerPrefix + zone + "/" + id, Taints: ks.Taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: alloc,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: ip},
				{Type: corev1.NodeHostName, Address: name},
				{Type: corev1.NodeInternalDNS, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:            labels[corev1.LabelArchStable],
				OperatingSystem:         labels[corev1.LabelOSStable],
				OSImage:                 osImage(ks.OS),
				KubeletVersion:          b.cfg.KubeletVersion,
				ContainerRuntimeVersion: "containerd://1.7.27",
				SystemUUID:              id,
				MachineID:               strings.TrimPrefix(id, "i-"),
			},
		},
	}, nil
}

// NodeName is the node name EKS gives an instance: its private DNS name,
// else ip-a-b-c-d.ec2.internal from its private IP.
func NodeName(privateDNS, privateIP string) string {
	if privateDNS != "" {
		return privateDNS
	}
	if privateIP == "" {
		return ""
	}
	return "ip-" + strings.ReplaceAll(privateIP, ".", "-") + ".ec2.internal"
}

// removeGone deletes the bridge's nodes whose instance is not running.
func (b *Bridge) removeGone(ctx context.Context, running map[string]bool) error {
	nodes, err := b.cfg.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Annotations[KwokAnnotation] != KwokAnnotationValue || !strings.HasPrefix(n.Spec.ProviderID, providerPrefix) {
			continue
		}
		id := n.Spec.ProviderID[strings.LastIndexByte(n.Spec.ProviderID, '/')+1:]
		if running[id] {
			continue
		}
		err := b.cfg.Kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete node %s: %w", n.Name, err)
		}
		b.log.Info("node removed: instance not running", "node", n.Name, "instance", id)
	}
	return nil
}

// zoneID maps us-east-1a to use1-az1 (the local cloud's stand-in for the
// account's zone-id mapping).
func zoneID(zone string) string {
	if len(zone) < 2 {
		return ""
	}
	parts := strings.Split(zone[:len(zone)-1], "-")
	if len(parts) != 3 || parts[1] == "" {
		return ""
	}
	return fmt.Sprintf("%s%c%s-az%d", parts[0], parts[1][0], parts[2], int(zone[len(zone)-1]-'a')+1)
}

// osImage is the image name a node of the operating system reports.
func osImage(os string) string {
	if os == OSWindows {
		return "Windows Server Core"
	}
	return "Amazon Linux"
}
