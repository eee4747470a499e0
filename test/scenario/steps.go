package scenario

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/types"
)

// Step kinds, as they are spelled in the file.
const (
	KindScale     = "scale"
	KindApply     = "apply"
	KindDelete    = "delete"
	KindWaitFor   = "waitFor"
	KindInterrupt = "interrupt"
	KindCapacity  = "capacity"
	KindAdvance   = "advance"
	KindSleep     = "sleep"
)

// stepKinds is every step kind, in the order errors list them: how it
// plays (through Player), how a progress line shows it, and whether a
// timeout may sit beside it. A kind's content is the Step field whose
// yaml tag is its name. Adding a kind is a field of Step, a row here and
// a method of Player.
var stepKinds = []stepKind{
	{name: KindScale,
		play: func(ctx context.Context, p Player, s Step) error { return p.Scale(ctx, s.Scale) },
		show: func(s Step) string {
			return fmt.Sprintf("scale %s/%s to %d", s.Scale.Namespace, s.Scale.Name, s.Scale.Replicas)
		}},
	{name: KindApply,
		play: func(ctx context.Context, p Player, s Step) error { return p.Apply(ctx, s.Apply) },
		show: func(s Step) string { return "apply " + filepath.Base(s.Apply) }},
	{name: KindDelete,
		play: func(ctx context.Context, p Player, s Step) error { return p.Delete(ctx, s.Delete) },
		show: func(s Step) string {
			return fmt.Sprintf("delete %s %s/%s", s.Delete.Kind, s.Delete.Namespace, s.Delete.Name)
		}},
	{name: KindWaitFor, timeout: true,
		play: func(ctx context.Context, p Player, s Step) error { return p.WaitFor(ctx, s.WaitFor) },
		show: func(s Step) string { return "wait for " + s.WaitFor.String() }},
	{name: KindInterrupt,
		play: func(ctx context.Context, p Player, s Step) error { return p.Interrupt(ctx, s.Interrupt) },
		show: func(s Step) string { return fmt.Sprintf("interrupt (%s) node %s", s.Interrupt.Kind, s.Interrupt.Node) }},
	{name: KindCapacity,
		play: func(ctx context.Context, p Player, s Step) error { return p.Capacity(ctx, s.Capacity) },
		show: func(s Step) string { return s.Capacity.String() }},
	{name: KindAdvance,
		play: func(ctx context.Context, p Player, s Step) error { return p.Advance(ctx, s.Advance) },
		show: func(s Step) string { return "advance the functions' clock by " + s.Advance.String() }},
	{name: KindSleep,
		play: func(ctx context.Context, p Player, s Step) error { return p.Sleep(ctx, s.Sleep) },
		show: func(s Step) string { return "sleep " + s.Sleep.String() }},
}

type stepKind struct {
	name    string
	timeout bool // a timeout may sit beside the kind (it may also sit inside)
	play    func(context.Context, Player, Step) error
	show    func(Step) string
}

// StepKinds lists every step kind.
var StepKinds = func() []string {
	out := make([]string, len(stepKinds))
	for i, k := range stepKinds {
		out[i] = k.name
	}
	return out
}()

func kindOf(name string) (stepKind, bool) {
	for _, k := range stepKinds {
		if k.name == name {
			return k, true
		}
	}
	return stepKind{}, false
}

// Player plays steps (package player implements it on the local cloud):
// each step kind calls one method.
type Player interface {
	Scale(context.Context, *Scale) error
	Apply(ctx context.Context, file string) error
	Delete(context.Context, *Delete) error
	WaitFor(context.Context, *WaitFor) error
	Interrupt(context.Context, *Interrupt) error
	Capacity(context.Context, *Capacity) error
	Advance(context.Context, time.Duration) error
	Sleep(context.Context, time.Duration) error
}

// Step is one step; exactly one of its kind's fields is set.
type Step struct {
	Kind string `yaml:"-"`
	// Line is the step's line in the file (for progress and errors).
	Line int `yaml:"-"`

	Scale     *Scale     `yaml:"scale"`
	Apply     string     `yaml:"apply" check:"path"` // a manifest file (absolute)
	Delete    *Delete    `yaml:"delete"`
	WaitFor   *WaitFor   `yaml:"waitFor"`
	Interrupt *Interrupt `yaml:"interrupt"`
	Capacity  *Capacity  `yaml:"capacity"`
	// Advance moves the functions' clock on; Sleep waits in real time.
	Advance time.Duration `yaml:"advance" check:"positive"`
	Sleep   time.Duration `yaml:"sleep" check:"positive"`
}

// Play plays the step on p.
func (s Step) Play(ctx context.Context, p Player) error {
	k, ok := kindOf(s.Kind)
	if !ok {
		return fmt.Errorf("unknown step %q (known: %s)", s.Kind, strings.Join(StepKinds, ", "))
	}
	return k.play(ctx, p, s)
}

// String is the step as a progress line shows it.
func (s Step) String() string {
	if k, ok := kindOf(s.Kind); ok {
		return k.show(s)
	}
	return s.Kind
}

// decodeNode decodes one step: a mapping with exactly one key naming its
// kind (and, beside a waitFor, its timeout).
func (s *Step) decodeNode(d *decoder, n *yaml.Node, path string) error {
	*s = Step{Line: n.Line}
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return d.errf(n, path, "want a step (one of %s), got %s", strings.Join(StepKinds, ", "), kindName(n))
	}
	var kinds []*yaml.Node
	for i := 0; i < len(n.Content); i += 2 {
		if _, ok := kindOf(n.Content[i].Value); ok {
			kinds = append(kinds, n.Content[i])
		}
	}
	switch {
	case len(kinds) == 0:
		k := n.Content[0]
		return d.errf(k, path, "unknown step %q (known: %s)", k.Value, strings.Join(StepKinds, ", "))
	case len(kinds) > 1:
		return d.errf(kinds[1], path, "one step per list item: %s and %s", kinds[0].Value, kinds[1].Value)
	}
	kind, _ := kindOf(kinds[0].Value)
	s.Kind = kind.name
	// The timeout may sit inside the condition ({pods: {...}, timeout: 2m})
	// or beside it, as a sibling key of the step; not both.
	var timeoutNode *yaml.Node
	var beside time.Duration
	fields := map[string]field{kind.name: {set: func(v *yaml.Node, p string) error {
		if inner := valueOf(v, "timeout"); inner != nil {
			if timeoutNode != nil {
				return d.errf(inner, join(p, "timeout"), "timeout given twice (also at line %d)", timeoutNode.Line)
			}
			timeoutNode = inner
		}
		f, r := stepField(s, kind.name)
		return d.value(v, p, f, r)
	}}}
	if kind.timeout {
		fields["timeout"] = field{set: func(v *yaml.Node, p string) error {
			if timeoutNode != nil {
				return d.errf(v, p, "timeout given twice (also at line %d)", timeoutNode.Line)
			}
			timeoutNode = v
			return d.duration(v, p, reflect.ValueOf(&beside).Elem(), rules{positive: true})
		}}
	}
	if _, err := d.keys(n, path, fields); err != nil {
		return err
	}
	if beside > 0 {
		s.WaitFor.Timeout = beside
	}
	return nil
}

// stepField is the field of Step holding kind's content, with its rules.
func stepField(s *Step, kind string) (reflect.Value, rules) {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.Tag.Get("yaml") == kind {
			return v.Field(i), parseRules(f.Tag.Get("check"))
		}
	}
	panic("scenario: no Step field for step kind " + kind)
}

// valueOf is the value of key in mapping n (nil: none, or n is not a
// mapping).
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Scale sets a Deployment's replicas.
type Scale struct {
	types.NamespacedName `yaml:"deployment" check:"required,defaultNamespace"`
	Replicas             int `yaml:"replicas" check:"required"`
}

// Delete removes one object; Namespace is empty for cluster-scoped kinds.
type Delete struct {
	Kind                 string `yaml:"kind" check:"required,nonempty"`
	types.NamespacedName `yaml:"name" check:"required"`
}

// WaitFor waits until a condition holds, at most Timeout: pods, nodes,
// the interruptions handled / consolidation actions done so far, or the
// nodes' price per hour.
type WaitFor struct {
	Pods                 *PodsCondition  `yaml:"pods"`
	Nodes                *NodesCondition `yaml:"nodes"`
	InterruptionsHandled *Range          `yaml:"interruptionsHandled" check:"whole,bound"`
	ConsolidationActions *Range          `yaml:"consolidationActions" check:"whole,bound"`
	// PricePerHour is the price of the live nodes (the latest sample).
	PricePerHour *Range `yaml:"pricePerHour" check:"bound"`
	// RegionFigures, written "read", holds once the state table has the
	// cloud's region's figures (the provision sweep read the Pricing API).
	RegionFigures bool          `yaml:"regionFigures" check:"word=read"`
	Timeout       time.Duration `yaml:"timeout" check:"positive,default=2m"`
}

// DefaultTimeout bounds a waitFor step without a timeout (the default
// of WaitFor.Timeout's tag).
const DefaultTimeout = 2 * time.Minute

func (w *WaitFor) check() string {
	set := 0
	for _, b := range []bool{w.Pods != nil, w.Nodes != nil, w.InterruptionsHandled != nil, w.ConsolidationActions != nil, w.PricePerHour != nil, w.RegionFigures} {
		if b {
			set++
		}
	}
	if set != 1 {
		return "want exactly one of pods, nodes, interruptionsHandled, consolidationActions, pricePerHour and regionFigures"
	}
	return ""
}

func (w *WaitFor) String() string {
	s := ""
	switch {
	case w.Pods != nil:
		s = "pods " + w.Pods.String()
	case w.Nodes != nil:
		s = "nodes " + w.Nodes.String()
	case w.InterruptionsHandled != nil:
		s = "interruptions handled " + w.InterruptionsHandled.String()
	case w.ConsolidationActions != nil:
		s = "consolidation actions " + w.ConsolidationActions.String()
	case w.PricePerHour != nil:
		s = "price per hour " + w.PricePerHour.String()
	case w.RegionFigures:
		s = "the region's figures read"
	}
	return fmt.Sprintf("%s (at most %s)", s, w.Timeout)
}

// Interrupt delivers a fault of the local cloud (Kind: one of package
// cloudfault's names) to one node's instance: Node is a node name or "any"
// (the first Nodewright node by name, of CapacityType when set).
type Interrupt struct {
	Kind         string `yaml:"kind" check:"required,fault"`
	Node         string `yaml:"node" check:"nonempty,default=any"`
	CapacityType string `yaml:"capacityType" check:"capacityType"`
	// Notice is the time between the warning and the instance's end (for
	// the faults that end it; default 2 minutes).
	Notice time.Duration `yaml:"notice" check:"default=2m"`
}

func (in *Interrupt) check() string {
	if in.CapacityType != "" && in.Node != "any" {
		return "capacityType chooses among nodes: only with node: any"
	}
	return ""
}

// Capacity exhausts capacity pools or restores them all.
type Capacity struct {
	Exhaust []Pool `yaml:"exhaust" check:"empty=no pools"`
	Restore bool   `yaml:"restore" check:"word=all"`
}

func (c *Capacity) check() string {
	if c.Restore == (len(c.Exhaust) > 0) {
		return "want exactly one of exhaust and restore"
	}
	return ""
}

func (c *Capacity) String() string {
	if c.Restore {
		return "capacity: restore all"
	}
	var parts []string
	for _, p := range c.Exhaust {
		parts = append(parts, p.String())
	}
	return "capacity: exhaust " + strings.Join(parts, ", ")
}

// Pool names capacity pools; InstanceType and Zone may be "*".
type Pool struct {
	InstanceType string `yaml:"instanceType" check:"nonempty,default=*"`
	CapacityType string `yaml:"capacityType" check:"required,capacityType"`
	Zone         string `yaml:"zone" check:"nonempty,default=*"`
}

func (p Pool) String() string {
	return fmt.Sprintf("%s %s in %s", p.InstanceType, p.CapacityType, p.Zone)
}
