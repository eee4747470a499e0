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
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud/awsfront"
	"github.com/nodewright/nodewright/test/report"
	"github.com/nodewright/nodewright/test/scenario"
)

// step plays one step.
func (pl *player) step(ctx context.Context, st scenario.Step) error {
	switch st.Kind {
	case scenario.KindScale:
		return harness.Scale(ctx, pl.lc, st.Scale.Namespace, st.Scale.Name, st.Scale.Replicas)
	case scenario.KindApply:
		done, err := pl.app.Apply(ctx, st.Apply)
		if err == nil {
			pl.obs.event(report.KindStep, "apply", "%v", done)
		}
		return err
	case scenario.KindDelete:
		return pl.app.Delete(ctx, st.Delete.Kind, st.Delete.Namespace, st.Delete.Name)
	case scenario.KindWaitFor:
		return pl.waitFor(ctx, st.WaitFor)
	case scenario.KindInterrupt:
		return pl.interrupt(ctx, st.Interrupt)
	case scenario.KindCapacity:
		pl.capacity(st.Capacity)
		return nil
	case scenario.KindAdvance:
		pl.h.Clock.Advance(st.Advance)
		select {
		case pl.kick <- struct{}{}:
		default:
		}
		return nil
	case scenario.KindSleep:
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(st.Sleep):
			return nil
		}
	}
	return fmt.Errorf("unknown step %q", st.Kind)
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

func (pl *player) waitFor(ctx context.Context, w *scenario.WaitFor) error {
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
	c := w.Nodes
	return harness.Poll(ctx, w.Timeout, "nodes "+c.String(), func() (bool, string, error) {
		n := len(filterNodes(pl.obs.ourNodes(), c))
		return c.Holds(float64(n)), fmt.Sprintf("%d nodes", n), nil
	})
}

// interrupt delivers an interruption for a node's instance through the AWS
// front, as EC2 and AWS Health do: the event goes to the interruption
// queue (EventBridge) and, for kinds that end the instance, the instance
// ends after the notice.
func (pl *player) interrupt(ctx context.Context, in *scenario.Interrupt) error {
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
	detail := fmt.Sprintf("%s on node %s (%s %s)", in.Kind, node.Name, node.Labels[apis.LabelInstanceType], node.Labels[apis.LabelCapacityType])
	var err error
	switch in.Kind {
	case scenario.InterruptSpot:
		err = pl.lc.AWS.Interrupt(ctx, id, awsfront.SpotInterruption, in.Notice)
	case scenario.InterruptRebalance:
		err = pl.lc.AWS.Interrupt(ctx, id, awsfront.Rebalance, in.Notice)
	case scenario.InterruptScheduledChange:
		err = pl.lc.AWS.Interrupt(ctx, id, awsfront.ScheduledChange, in.Notice)
	case scenario.InterruptStateChange:
		// The instance is terminated outside Nodewright; the front sends the
		// state-change notifications.
		_, err = ec2.NewFromConfig(pl.lc.AWSConfig()).TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	default:
		err = fmt.Errorf("unknown interruption %q", in.Kind)
	}
	if err != nil {
		return err
	}
	pl.obs.event(report.KindInterruption, id, "delivered: %s", detail)
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

// capacity exhausts pools in the AWS front, or restores every pool this
// scenario exhausted.
func (pl *player) capacity(c *scenario.Capacity) {
	if c.Restore {
		for k := range pl.exhausted {
			pl.lc.AWS.SetCapacity(k[0], k[1], k[2], -1)
		}
		pl.obs.event(report.KindCapacity, "pools", "restored %d pools", len(pl.exhausted))
		pl.exhausted = map[[3]string]bool{}
		return
	}
	for _, p := range c.Exhaust {
		pl.lc.AWS.SetCapacity(p.InstanceType, p.Zone, p.CapacityType, 0)
		pl.exhausted[[3]string{p.InstanceType, p.Zone, p.CapacityType}] = true
		pl.obs.event(report.KindCapacity, p.String(), "exhausted: CreateFleet answers InsufficientInstanceCapacity")
	}
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
