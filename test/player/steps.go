package player

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud/awsfront"
	"github.com/nodewright/nodewright/test/localcloud/cloudfault"
	"github.com/nodewright/nodewright/test/report"
	"github.com/nodewright/nodewright/test/scenario"
)

// The player plays every step kind of the scenario format (its table
// calls these methods), and the AWS front takes every local-cloud fault.
var (
	_ scenario.Player  = (*player)(nil)
	_ cloudfault.Cloud = (*awsfront.Front)(nil)
)

// Scale sets a Deployment's replicas.
func (pl *player) Scale(ctx context.Context, s *scenario.Scale) error {
	return harness.Scale(ctx, pl.lc, s.Namespace, s.Name, s.Replicas)
}

// Apply applies a manifest file.
func (pl *player) Apply(ctx context.Context, file string) error {
	done, err := pl.app.Apply(ctx, file)
	if err == nil {
		pl.obs.event(report.KindStep, "apply", "%v", done)
	}
	return err
}

// Delete deletes one object.
func (pl *player) Delete(ctx context.Context, d *scenario.Delete) error {
	return pl.app.Delete(ctx, d.Kind, d.Namespace, d.Name)
}

// Advance moves the functions' clock on and has consolidation tick.
func (pl *player) Advance(_ context.Context, d time.Duration) error {
	pl.h.Clock.Advance(d)
	select {
	case pl.kick <- struct{}{}:
	default:
	}
	return nil
}

// Sleep waits in real time.
func (pl *player) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// podCount is the pods a selector matches.
type podCount struct{ running, pending, total int }

func (pl *player) countPods(_ context.Context, selector string) (podCount, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return podCount{}, err
	}
	var c podCount
	for _, p := range pl.obs.livePods() {
		if !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		c.total++
		switch {
		case pl.obs.running(p):
			c.running++
		case p.Status.Phase == corev1.PodPending:
			c.pending++
		}
	}
	return c, nil
}

// WaitFor waits until the condition holds, at most its timeout.
func (pl *player) WaitFor(ctx context.Context, w *scenario.WaitFor) error {
	if w.Pods != nil {
		c := w.Pods
		return harness.Poll(ctx, w.Timeout, "pods "+c.String(), func() (bool, string, error) {
			n, err := pl.countPods(ctx, c.Selector)
			ok := (c.Running == nil || n.running == *c.Running) && (c.Pending == nil || n.pending == *c.Pending)
			return ok, fmt.Sprintf("%d pods: %d Running, %d Pending", n.total, n.running, n.pending), err
		})
	}
	if r := w.InterruptionsHandled; r != nil {
		return harness.Poll(ctx, w.Timeout, "interruptions handled "+r.String(), func() (bool, string, error) {
			n, _ := pl.obs.counts()
			return r.Holds(float64(n)), fmt.Sprintf("%d handled", n), nil
		})
	}
	if r := w.ConsolidationActions; r != nil {
		return harness.Poll(ctx, w.Timeout, "consolidation actions "+r.String(), func() (bool, string, error) {
			_, n := pl.obs.counts()
			return r.Holds(float64(n)), fmt.Sprintf("%d done", n), nil
		})
	}
	if r := w.PricePerHour; r != nil {
		return harness.Poll(ctx, w.Timeout, "price per hour "+r.String(), func() (bool, string, error) {
			p := pl.obs.price()
			return r.Holds(p), fmt.Sprintf("$%.4f/h", p), nil
		})
	}
	if w.RegionFigures {
		region := pl.lc.Options.Region
		return harness.Poll(ctx, w.Timeout, "the region's figures read", func() (bool, string, error) {
			data, err := pl.obs.store.RegionFigures(ctx, region)
			switch {
			case err != nil:
				return false, "read the state table: " + err.Error(), nil
			case data == nil:
				return false, "no figures for " + region + " in the state table yet", nil
			}
			return true, region + "'s figures in the state table", nil
		})
	}
	c := w.Nodes
	return harness.Poll(ctx, w.Timeout, "nodes "+c.String(), func() (bool, string, error) {
		n := len(filterNodes(pl.obs.ourNodes(), c))
		return c.Holds(float64(n)), fmt.Sprintf("%d nodes", n), nil
	})
}

// Interrupt delivers a local-cloud fault (package cloudfault) to a node's
// instance through the AWS front, as EC2 and AWS Health do: the event goes
// to the interruption queue (EventBridge) and, for faults that end the
// instance, the instance ends after the notice.
func (pl *player) Interrupt(ctx context.Context, in *scenario.Interrupt) error {
	// "any" is the eligible node running the most pods (then the first by
	// name): the interruption that moves the most.
	pods := map[string]int{}
	for _, p := range pl.obs.livePods() {
		pods[p.Spec.NodeName]++
	}
	var node *corev1.Node
	for _, n := range pl.obs.ourNodes() {
		if in.Node != "any" && n.Name != in.Node {
			continue
		}
		if in.Node == "any" && (n.Spec.Unschedulable || tainted(n) || (in.CapacityType != "" && n.Labels[apis.LabelCapacityType] != in.CapacityType)) {
			continue
		}
		if node == nil || pods[n.Name] > pods[node.Name] || (pods[n.Name] == pods[node.Name] && n.Name < node.Name) {
			node = n
		}
	}
	if node == nil {
		return fmt.Errorf("no node %q to interrupt (nodes: %d)", in.Node, len(pl.obs.ourNodes()))
	}
	id := harness.InstanceOf(node)
	if err := cloudfault.Inject(ctx, pl.faults, in.Kind, id, in.Notice); err != nil {
		return err
	}
	pl.obs.event(report.KindInterruption, id, "delivered: %s on node %s (%s %s)", in.Kind, node.Name, node.Labels[apis.LabelInstanceType], node.Labels[apis.LabelCapacityType])
	return nil
}

func tainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == apis.TaintKeyDisrupted {
			return true
		}
	}
	return false
}

// Capacity exhausts pools in the AWS front, or restores every pool this
// scenario exhausted.
func (pl *player) Capacity(_ context.Context, c *scenario.Capacity) error {
	if c.Restore {
		for k := range pl.exhausted {
			pl.lc.AWS.SetCapacity(k[0], k[1], k[2], -1)
		}
		pl.obs.event(report.KindCapacity, "pools", "restored %d pools", len(pl.exhausted))
		pl.exhausted = map[[3]string]bool{}
		return nil
	}
	for _, p := range c.Exhaust {
		pl.lc.AWS.SetCapacity(p.InstanceType, p.Zone, p.CapacityType, 0)
		pl.exhausted[[3]string{p.InstanceType, p.Zone, p.CapacityType}] = true
		pl.obs.event(report.KindCapacity, p.String(), "exhausted: CreateFleet answers InsufficientInstanceCapacity")
	}
	return nil
}

// launches joins every instance that carries a NodeClaim tag (in any
// state) with what the observer saw of the NodeClaim, for Duplicates.
func (pl *player) launches(ctx context.Context) ([]report.Launch, error) {
	client := ec2.NewFromConfig(pl.lc.AWSConfig())
	byClaim := map[string][]string{}
	p := ec2.NewDescribeInstancesPaginator(client, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{apis.TagKeyNodeClaim}}},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe instances: %w", err)
		}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				for _, t := range in.Tags {
					if aws.ToString(t.Key) == apis.TagKeyNodeClaim {
						byClaim[aws.ToString(t.Value)] = append(byClaim[aws.ToString(t.Value)], aws.ToString(in.InstanceId))
					}
				}
			}
		}
	}
	o := pl.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []report.Launch
	for name, ids := range byClaim {
		sort.Strings(ids)
		l := report.Launch{NodeClaim: name, Instances: ids}
		if c := o.claims[name]; c != nil {
			l.Registered = c.registered
			l.Settled = c.registered || c.gone != 0
			l.Pods = o.podsOnClaim(c)
			l.Static = c.rec.Reason == provision.ReasonStatic
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeClaim < out[j].NodeClaim })
	return out, nil
}

// cacheHandler adapts a pod callback to an informer's event handler.
type cacheHandler struct{ fn func(*corev1.Pod) }

var _ cache.ResourceEventHandler = cacheHandler{}

func (h cacheHandler) OnAdd(obj any, _ bool) {
	if p, ok := obj.(*corev1.Pod); ok {
		h.fn(p)
	}
}

func (h cacheHandler) OnUpdate(_, obj any) { h.OnAdd(obj, false) }

func (h cacheHandler) OnDelete(any) {}
