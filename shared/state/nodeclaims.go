package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Phase is where a NodeClaim is in its life.
type Phase string

// NodeClaim phases, in order.
const (
	// Launching: the record is written and CreateFleet is being called (or
	// was, by an invocation that died: re-driving the same call with the
	// same ClientToken returns the same instance).
	Launching Phase = "launching"
	// Launched: EC2 launched the instance; its Node has not registered.
	Launched Phase = "launched"
	// Registered: a Node with the instance's providerID exists.
	Registered Phase = "registered"
	// Initialized: the Node is Ready and its startup taints are gone.
	Initialized Phase = "initialized"
	// Disrupting: an action (interruption, consolidation, expiry, drift,
	// deletion) is replacing or draining the node; Disruption says which.
	Disrupting Phase = "disrupting"
	// Terminating: the node is drained (or given up); the instance is being
	// terminated and the Node deleted.
	Terminating Phase = "terminating"
)

// InFlight reports whether a NodeClaim in this phase is capacity that has
// not registered yet.
func (p Phase) InFlight() bool { return p == Launching || p == Launched }

// NodeClaim is the record of one node Nodewright launches.
type NodeClaim struct {
	Name      string `json:"name"`
	NodePool  string `json:"nodePool"`
	NodeClass string `json:"nodeClass"`
	Phase     Phase  `json:"phase"`
	// Claim is the planned NodeClaim the fleet request is built from (its
	// instance-type options, zones, capacity types, requirements, labels,
	// taints, planned pods and expected price): re-driving a launch uses it
	// unchanged.
	Claim scheduling.NodeClaim `json:"claim"`
	// Capacity is what counts against the NodePool's limits: while
	// launching, the largest of the options in every resource; once
	// launched, the instance type's.
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Hashes of the NodePool and EC2NodeClass it was launched under (drift).
	NodePoolHash  string `json:"nodePoolHash,omitempty"`
	NodeClassHash string `json:"nodeClassHash,omitempty"`
	// Reason is why it was launched ("provisioning", "replacement for
	// <nodeclaim>: <action>").
	Reason string `json:"reason,omitempty"`
	// Group names the fleet that launches it (the instances' NodeClaim
	// tag at launch): its own name, or the first name of a group of
	// identical NodeClaims launched by one fleet of GroupSize instances.
	// (Records written before Launch existed used it as the ClientToken.)
	Group     string `json:"group,omitempty"`
	GroupSize int    `json:"groupSize,omitempty"`
	// Launch is the fleet's request, a fleet.Plan as JSON (its
	// ClientToken, unique per cluster and launch, and everything
	// CreateFleet is built from), written before CreateFleet is called: a
	// re-drive sends it again unchanged. Opaque here, so the state table's
	// readers (the webhook) need not link the EC2 client.
	Launch json.RawMessage `json:"launch,omitempty"`

	InstanceID   string `json:"instanceId,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	ImageID      string `json:"imageId,omitempty"`
	// SubnetID and SecurityGroups are the instance's network placement at
	// launch (subnet and security group drift; empty in records written
	// before they were kept: unknown, never drifted).
	SubnetID       string   `json:"subnetId,omitempty"`
	SecurityGroups []string `json:"securityGroups,omitempty"`
	PricePerHour   float64  `json:"pricePerHour,omitempty"`
	ProviderID     string   `json:"providerId,omitempty"`
	NodeName       string   `json:"nodeName,omitempty"`

	// PlacementGroupID is the placement group it launched into ("": none;
	// placement group drift).
	PlacementGroupID string `json:"placementGroupId,omitempty"`

	CreatedAt     time.Time `json:"createdAt"`
	LaunchedAt    time.Time `json:"launchedAt,omitzero"`
	RegisteredAt  time.Time `json:"registeredAt,omitzero"`
	InitializedAt time.Time `json:"initializedAt,omitzero"`
	// AdoptedAt is when a sweep adopted the node from Karpenter (package
	// adoption); zero for the nodes Nodewright launched.
	AdoptedAt time.Time `json:"adoptedAt,omitzero"`
	// Disruption is set while an action disrupts the node.
	Disruption *Disruption `json:"disruption,omitempty"`
	// PodsHash fingerprints the node's reschedulable pods (their UIDs) and
	// PodsChangedAt is when it last changed (zero: never seen; the node's
	// initialization stands for it): consolidateAfter counts from there.
	PodsHash      string    `json:"podsHash,omitempty"`
	PodsChangedAt time.Time `json:"podsChangedAt,omitzero"`

	// Version is the record's version in the table (0: not stored yet).
	Version int64 `json:"-"`
}

// Disruption is the node's termination intent: why it is to go (Cause,
// Reason), how urgently, by when (Deadline), and which action owns it
// (Action). Every reason to remove a node writes this one intent, merged
// with Merge (intent.go).
type Disruption struct {
	// Action owns the intent: the action carrying it out.
	Action string `json:"action"`
	// Reason is the owner's detail (a consolidation method, an event kind).
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	// Drift is, for a drift, how the node drifted: Karpenter's Drifted
	// condition reason (NodePoolDrifted, RequirementsDrifted, AMIDrift,
	// SubnetDrift, SecurityGroupDrift, NodeClassDrift, PlacementGroupDrift,
	// InstanceTypeNotFound).
	Drift string `json:"drift,omitempty"`
	// Cause and Urgency type the intent (empty in records written before
	// they existed: Normalize infers them from Action).
	Cause   Cause   `json:"cause,omitempty"`
	Urgency Urgency `json:"urgency,omitempty"`
	// Reschedule is set once the node's pods are to move: its replacement
	// is launching or it is draining. Solves then place its pods elsewhere
	// and no longer count the node as capacity (before, while an action is
	// still being validated, the node and its pods stay where they are).
	Reschedule bool `json:"reschedule,omitempty"`
	// Deadline is when the node goes whatever happens (a spot instance's
	// end, terminationGracePeriod): pods left then are deleted.
	Deadline time.Time `json:"deadline,omitzero"`
}

// ProviderIDFor is the providerID a Node of instance in zone registers
// with on EKS.
func ProviderIDFor(zone, instanceID string) string { return "aws:///" + zone + "/" + instanceID }

func (s *Store) nodeClaimItem(nc *NodeClaim, version int64) (item, error) {
	it, err := s.base(Key(PrefixNodeClaim, nc.Name), nc, version)
	if err != nil {
		return nil, err
	}
	it[names.NodePoolAttribute] = str(nc.NodePool)
	it[attrState] = str(string(nc.Phase))
	if nc.InstanceID != "" {
		it[names.InstanceIDAttribute] = str(nc.InstanceID)
	}
	return it, nil
}

func decodeNodeClaim(it item) (*NodeClaim, error) {
	nc := &NodeClaim{}
	if err := decode(it, nc); err != nil {
		return nil, err
	}
	nc.Version = getNum(it, attrVersion)
	return nc, nil
}

// Versions are the launch versions a launcher reads before the records it
// decides from (Store.Versions): the cluster's, which every launch
// advances (the launch fence), and those of the NodePools with limits.
type Versions struct {
	Cluster int64
	Pools   map[string]int64
}

// Versions reads the cluster's launch version and every NodePool's. Read
// them before the records: a launch between the two reads shows in the
// records and fails the caller's commit, never the other way round.
func (s *Store) Versions(ctx context.Context) (Versions, error) {
	v := Versions{}
	it, err := s.get(ctx, KeyLaunchVersion)
	switch {
	case err == nil:
		v.Cluster = getNum(it, attrVersion)
	case !errors.Is(err, ErrNotFound):
		return v, fmt.Errorf("launch version: %w", err)
	}
	if v.Pools, err = s.PoolVersions(ctx); err != nil {
		return v, err
	}
	return v, nil
}

// CreateNodeClaims writes new records, all or none, before their instances
// are launched. The write is fenced by lease (it fails with ErrLeaseLost or
// ErrConflict if the caller no longer holds it), conditioned on the
// cluster's launch version being v.Cluster (the launch fence: two
// launchers that read the same records, a provision round and an
// interruption's replacement, cannot both buy for the same pods: the
// second fails with ErrConflict, reads the records again and finds the
// pods taken), and, for every NodePool in v.Pools (those with limits), on
// the pool's launch version (two invocations that both counted room under
// a limit cannot both use it). On success the records have Version 1 and
// the versions in v are advanced. Transactions are split to fit DynamoDB's
// limits (items and bytes); each part advances the versions.
func (s *Store) CreateNodeClaims(ctx context.Context, lease *Lease, claims []*NodeClaim, v *Versions) error {
	if len(claims) == 0 {
		return nil
	}
	if lease == nil {
		return errors.New("create nodeclaims: no lease to fence the write with")
	}
	if v == nil {
		return errors.New("create nodeclaims: no launch versions to fence the write with")
	}
	recs := make([]types.TransactWriteItem, 0, len(claims))
	sizes := make([]int, 0, len(claims))
	for _, nc := range claims {
		if nc.Phase == "" {
			nc.Phase = Launching
		}
		it, err := s.nodeClaimItem(nc, 1)
		if err != nil {
			return err
		}
		w := s.putItem(it, "attribute_not_exists(#pk)", map[string]string{"#pk": names.PartitionKey}, nil)
		recs = append(recs, w)
		sizes = append(sizes, writeSize(w))
	}
	return s.createNodeClaims(ctx, lease, claims, recs, sizes, v)
}

// createNodeClaims writes claims' items (recs, of sizes) in transactions
// that fit DynamoDB's limits, halving the set until each part fits; each
// part advances the versions for the next.
func (s *Store) createNodeClaims(ctx context.Context, lease *Lease, claims []*NodeClaim, recs []types.TransactWriteItem, sizes []int, v *Versions) error {
	touched := map[string]bool{}
	for _, nc := range claims {
		if _, ok := v.Pools[nc.NodePool]; ok {
			touched[nc.NodePool] = true
		}
	}
	poolNames := slices.Sorted(maps.Keys(touched))
	items := []types.TransactWriteItem{s.fence(lease), s.bumpVersion(KeyLaunchVersion, v.Cluster)}
	for _, p := range poolNames {
		items = append(items, s.bumpPool(p, v.Pools[p]))
	}
	c := change{put: make(map[string]int64, len(claims))}
	for _, nc := range claims {
		c.put[nc.Name] = 1
	}
	log := s.changeItem(c, s.now())
	size := writeSize(log)
	for _, w := range items {
		size += writeSize(w)
	}
	for _, n := range sizes {
		size += n
	}
	if len(items)+1+len(recs) > maxTransactItems || size > maxTransactBytes {
		if len(claims) == 1 {
			return fmt.Errorf("create nodeclaim %s: its record is %d bytes, more than a transaction takes", claims[0].Name, sizes[0])
		}
		half := len(claims) / 2
		if err := s.createNodeClaims(ctx, lease, claims[:half], recs[:half], sizes[:half], v); err != nil {
			return err
		}
		return s.createNodeClaims(ctx, lease, claims[half:], recs[half:], sizes[half:], v)
	}
	items = append(items, recs...)
	for _, nc := range claims {
		nc.Version = 1
	}
	if err := s.transactRecords(ctx, fmt.Sprintf("create %d nodeclaims", len(claims)), items, c, claims); err != nil {
		for _, nc := range claims {
			nc.Version = 0
		}
		return s.explainFence(ctx, lease, err)
	}
	v.Cluster++
	for _, p := range poolNames {
		v.Pools[p]++
	}
	return nil
}

// explainFence turns a failed fenced write into ErrLeaseLost when the
// lease is the reason.
func (s *Store) explainFence(ctx context.Context, l *Lease, err error) error {
	if !errors.Is(err, ErrConflict) || l == nil {
		return err
	}
	st, rerr := s.ReadLease(ctx, l.Name)
	if rerr != nil || st.Holder != l.Holder || st.Token != l.Token || !st.Until.After(s.now()) {
		return fmt.Errorf("%w (%v)", ErrLeaseLost, err)
	}
	return err
}

// PutNodeClaim writes nc if the stored record still has nc.Version, and
// advances nc.Version. ErrConflict if another invocation changed it.
func (s *Store) PutNodeClaim(ctx context.Context, nc *NodeClaim) error {
	it, err := s.nodeClaimItem(nc, nc.Version+1)
	if err != nil {
		return err
	}
	cond, nm, values := versionCondition(nc.Version)
	nc.Version++
	w := s.putItem(it, cond, nm, values)
	if err := s.transactRecords(ctx, "update nodeclaim "+nc.Name, []types.TransactWriteItem{w}, change{put: map[string]int64{nc.Name: nc.Version}}, []*NodeClaim{nc}); err != nil {
		nc.Version--
		return err
	}
	return nil
}

// DeleteNodeClaim removes the record if it still has nc.Version.
// ErrConflict if another invocation changed it.
func (s *Store) DeleteNodeClaim(ctx context.Context, nc *NodeClaim) error {
	cond, nm, values := versionCondition(nc.Version)
	w := types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(s.table), Key: s.key(Key(PrefixNodeClaim, nc.Name)),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: nm, ExpressionAttributeValues: values,
	}}
	return s.transactRecords(ctx, "delete nodeclaim "+nc.Name, []types.TransactWriteItem{w}, change{del: map[string]int64{nc.Name: nc.Version}}, nil)
}

// GetNodeClaim reads one record (ErrNotFound if there is none).
func (s *Store) GetNodeClaim(ctx context.Context, name string) (*NodeClaim, error) {
	it, err := s.get(ctx, Key(PrefixNodeClaim, name))
	if err != nil {
		return nil, fmt.Errorf("nodeclaim %s: %w", name, err)
	}
	return decodeNodeClaim(it)
}

// NodeClaimByInstance finds the record of an instance through the
// byInstanceId index (ErrNotFound: not one of ours). The index is
// eventually consistent, so the record is read again from the table.
func (s *Store) NodeClaimByInstance(ctx context.Context, instanceID string) (*NodeClaim, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(names.IndexByInstanceID),
		KeyConditionExpression:    aws.String("#i = :i"),
		ExpressionAttributeNames:  map[string]string{"#i": names.InstanceIDAttribute},
		ExpressionAttributeValues: item{":i": str(instanceID)},
	})
	if err != nil {
		return nil, fmt.Errorf("find instance %s: %w", instanceID, err)
	}
	for _, it := range out.Items {
		if getStr(it, names.PartitionKey) != s.cluster {
			continue
		}
		name := getStr(it, names.SortKey)[len(PrefixNodeClaim):]
		nc, err := s.GetNodeClaim(ctx, name)
		if err != nil {
			return nil, err
		}
		if nc.InstanceID == instanceID {
			return nc, nil
		}
	}
	return nil, fmt.Errorf("instance %s: %w", instanceID, ErrNotFound)
}

// PoolVersions returns the launch version of every NodePool that has one.
// Read it before the records whose capacity is counted against limits.
func (s *Store) PoolVersions(ctx context.Context) (map[string]int64, error) {
	items, err := s.query(ctx, s.cluster, PrefixPool)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, it := range items {
		out[getStr(it, names.SortKey)[len(PrefixPool):]] = getNum(it, attrVersion)
	}
	return out, nil
}

// bumpPool advances a pool's launch version from expect.
func (s *Store) bumpPool(pool string, expect int64) types.TransactWriteItem {
	return s.bumpVersion(Key(PrefixPool, pool), expect)
}

// bumpVersion advances the version of item sk from expect.
func (s *Store) bumpVersion(sk string, expect int64) types.TransactWriteItem {
	u := &types.Update{
		TableName:                aws.String(s.table),
		Key:                      s.key(sk),
		UpdateExpression:         aws.String("SET #v = :next"),
		ExpressionAttributeNames: map[string]string{"#v": attrVersion},
		ExpressionAttributeValues: item{
			":next": num(expect + 1),
		},
	}
	if expect == 0 {
		u.ConditionExpression = aws.String("attribute_not_exists(#v)")
	} else {
		u.ConditionExpression = aws.String("#v = :cur")
		u.ExpressionAttributeValues[":cur"] = num(expect)
	}
	return types.TransactWriteItem{Update: u}
}

// Clone is a deep copy of nc (what NodeClaims hands out, so that a caller
// changing its records leaves the Store's copy alone).
func (nc *NodeClaim) Clone() *NodeClaim {
	if nc == nil {
		return nil
	}
	out := *nc
	out.Claim = cloneClaim(nc.Claim)
	out.Capacity = cloneResources(nc.Capacity)
	out.Launch = slices.Clone(nc.Launch)
	out.SecurityGroups = slices.Clone(nc.SecurityGroups)
	if nc.Disruption != nil {
		d := *nc.Disruption
		out.Disruption = &d
	}
	return &out
}

func cloneClaim(c scheduling.NodeClaim) scheduling.NodeClaim {
	out := c
	out.InstanceTypes = slices.Clone(c.InstanceTypes)
	out.CapacityTypes = slices.Clone(c.CapacityTypes)
	out.Zones = slices.Clone(c.Zones)
	out.Pods = slices.Clone(c.Pods)
	if c.Requirements != nil {
		out.Requirements = make([]corev1.NodeSelectorRequirement, len(c.Requirements))
		for i := range c.Requirements {
			c.Requirements[i].DeepCopyInto(&out.Requirements[i])
		}
	}
	out.Labels = maps.Clone(c.Labels)
	out.Taints = cloneTaints(c.Taints)
	out.StartupTaints = cloneTaints(c.StartupTaints)
	out.Requests = cloneResources(c.Requests)
	out.MinValues = maps.Clone(c.MinValues)
	return out
}

func cloneTaints(ts []corev1.Taint) []corev1.Taint {
	if ts == nil {
		return nil
	}
	out := make([]corev1.Taint, len(ts))
	for i := range ts {
		ts[i].DeepCopyInto(&out[i])
	}
	return out
}

func cloneResources(r corev1.ResourceList) corev1.ResourceList {
	if r == nil {
		return nil
	}
	return r.DeepCopy()
}
