// Package scenario is the format of `make run`'s scenarios: one YAML file
// naming the configuration, the manifests applied at the start, the local
// cloud's options, the steps to play and what must hold at the end. It
// only parses and validates (no I/O beyond reading the file): a field or
// step it does not know is an error naming the file, the line and the
// field path, so a typo never silently changes what a scenario tests.
package scenario

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"
)

// Scenario is one parsed scenario file. Paths are absolute (the file's
// relative paths resolved against its directory).
type Scenario struct {
	Name string
	// File is the scenario file's path.
	File string
	// Config are NodePool and EC2NodeClass files (empty: the shared
	// examples nodepool-default.yaml and ec2nodeclass-default.yaml).
	Config []string
	// Manifests are applied at the start, in order (any Kubernetes objects).
	Manifests []string
	Cloud     Cloud
	Steps     []Step
	Expect    Expect
}

// Cloud are the local cloud's options.
type Cloud struct {
	Zones     []string
	BootDelay time.Duration
	Seed      uint64
}

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

// StepKinds lists every step kind.
var StepKinds = []string{KindScale, KindApply, KindDelete, KindWaitFor, KindInterrupt, KindCapacity, KindAdvance, KindSleep}

// Step is one step; exactly one of its kind's fields is set.
type Step struct {
	Kind string
	// Line is the step's line in the file (for progress and errors).
	Line int

	Scale     *Scale
	Apply     string // a manifest file (absolute)
	Delete    *Delete
	WaitFor   *WaitFor
	Interrupt *Interrupt
	Capacity  *Capacity
	// Advance moves the functions' clock on; Sleep waits in real time.
	Advance time.Duration
	Sleep   time.Duration
}

// String is the step as a progress line shows it.
func (s Step) String() string {
	switch s.Kind {
	case KindScale:
		return fmt.Sprintf("scale %s/%s to %d", s.Scale.Namespace, s.Scale.Name, s.Scale.Replicas)
	case KindApply:
		return "apply " + filepath.Base(s.Apply)
	case KindDelete:
		return fmt.Sprintf("delete %s %s/%s", s.Delete.Kind, s.Delete.Namespace, s.Delete.Name)
	case KindWaitFor:
		return "wait for " + s.WaitFor.String()
	case KindInterrupt:
		return fmt.Sprintf("interrupt (%s) node %s", s.Interrupt.Kind, s.Interrupt.Node)
	case KindCapacity:
		if s.Capacity.Restore {
			return "capacity: restore all"
		}
		var parts []string
		for _, p := range s.Capacity.Exhaust {
			parts = append(parts, p.String())
		}
		return "capacity: exhaust " + strings.Join(parts, ", ")
	case KindAdvance:
		return "advance the functions' clock by " + s.Advance.String()
	case KindSleep:
		return "sleep " + s.Sleep.String()
	}
	return s.Kind
}

// Scale sets a Deployment's replicas.
type Scale struct {
	Namespace, Name string
	Replicas        int
}

// Delete removes one object.
type Delete struct {
	Kind            string
	Namespace, Name string // Namespace is empty for cluster-scoped kinds
}

// WaitFor waits until a condition holds, at most Timeout: pods, nodes,
// the interruptions handled / consolidation actions done so far, or the
// nodes' price per hour.
type WaitFor struct {
	Pods                 *PodsCondition
	Nodes                *NodesCondition
	InterruptionsHandled *Range
	ConsolidationActions *Range
	// PricePerHour is the price of the live nodes (the latest sample).
	PricePerHour *Range
	Timeout      time.Duration
}

// DefaultTimeout bounds a waitFor step without a timeout.
const DefaultTimeout = 2 * time.Minute

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
	}
	return fmt.Sprintf("%s (at most %s)", s, w.Timeout)
}

// PodsCondition holds when the pods the selector matches (not being
// deleted) number as many Running (and Ready) as asked, and as many
// Pending when Pending is set.
type PodsCondition struct {
	Selector string
	Running  *int
	Pending  *int
}

func (c *PodsCondition) String() string {
	var parts []string
	if c.Running != nil {
		parts = append(parts, fmt.Sprintf("%d Running", *c.Running))
	}
	if c.Pending != nil {
		parts = append(parts, fmt.Sprintf("%d Pending", *c.Pending))
	}
	return fmt.Sprintf("%s: %s", c.Selector, strings.Join(parts, ", "))
}

// NodesCondition holds when the Nodewright nodes (of NodePool, when set;
// of CapacityType, when set) number within [Min, Max].
type NodesCondition struct {
	NodePool     string
	CapacityType string
	Range
}

func (c *NodesCondition) String() string {
	var parts []string
	if c.NodePool != "" {
		parts = append(parts, "nodePool "+c.NodePool)
	}
	if c.CapacityType != "" {
		parts = append(parts, c.CapacityType)
	}
	parts = append(parts, c.Range.String())
	return strings.Join(parts, " ")
}

// Range is an inclusive bound on a number; nil ends are open.
type Range struct {
	Min, Max *float64
}

// Holds reports whether v is within the range.
func (r Range) Holds(v float64) bool {
	return (r.Min == nil || v >= *r.Min) && (r.Max == nil || v <= *r.Max)
}

func (r Range) String() string {
	switch {
	case r.Min != nil && r.Max != nil && *r.Min == *r.Max:
		return "= " + num(*r.Min)
	case r.Min != nil && r.Max != nil:
		return fmt.Sprintf("%s..%s", num(*r.Min), num(*r.Max))
	case r.Min != nil:
		return ">= " + num(*r.Min)
	case r.Max != nil:
		return "<= " + num(*r.Max)
	}
	return "any"
}

func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}

// Interrupt kinds.
const (
	InterruptSpot            = "spot"
	InterruptRebalance       = "rebalance"
	InterruptScheduledChange = "scheduled-change"
	InterruptStateChange     = "state-change"
)

// InterruptKinds lists every interruption kind.
var InterruptKinds = []string{InterruptSpot, InterruptRebalance, InterruptScheduledChange, InterruptStateChange}

// Interrupt delivers an interruption for one node's instance: Node is a
// node name or "any" (the first Nodewright node by name, of CapacityType
// when set).
type Interrupt struct {
	Kind         string
	Node         string
	CapacityType string
	// Notice is the time between the warning and the instance's end (spot
	// and scheduled-change; default 2 minutes).
	Notice time.Duration
}

// Capacity exhausts capacity pools or restores them all.
type Capacity struct {
	Exhaust []Pool
	Restore bool
}

// Pool names capacity pools; InstanceType and Zone may be "*".
type Pool struct {
	InstanceType, CapacityType, Zone string
}

func (p Pool) String() string {
	return fmt.Sprintf("%s %s in %s", p.InstanceType, p.CapacityType, p.Zone)
}

// Expect is what must hold when the scenario ends; nil fields are not
// checked.
type Expect struct {
	PDBViolations        *Range
	DuplicateLaunches    *Range
	Unschedulable        *Range
	InterruptionsHandled *Range
	ConsolidationActions *Range
	NodesLaunched        *Range
	PodsRunningAtEnd     *PodsCount
	// PodsEvicted counts the pods of the selector evicted through the
	// Eviction API during the scenario (a drain moving them).
	PodsEvicted       *PodsCount
	PricePerHourAtEnd *Range
	NodesAtEnd        *NodesCondition
}

// PodsCount counts the Running pods the selector matches.
type PodsCount struct {
	Selector string
	Range
}

// Error is a problem in a scenario file, at a line.
type Error struct {
	File string
	Line int
	Path string // field path, e.g. steps[2].waitFor.pods.selector
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Path, e.Msg)
}

// Load reads and parses a scenario file.
func Load(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(path, b)
}

// Parse parses a scenario file's content; path names it in errors and
// anchors its relative paths.
func Parse(path string, data []byte) (*Scenario, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	p := &parser{file: path, dir: filepath.Dir(abs)}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: path, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &Error{File: path, Msg: "empty scenario: want a mapping with name and steps"}
	}
	s := &Scenario{File: path}
	if err := p.scenario(doc.Content[0], s); err != nil {
		return nil, err
	}
	return s, nil
}

type parser struct {
	file, dir string
}

func (p *parser) errf(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// fields walks a mapping node: each key must be one of handlers' (else an
// error names it and lists the known ones); required keys must be present.
func (p *parser) fields(n *yaml.Node, path string, handlers map[string]func(*yaml.Node, string) error, required ...string) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, path, "want a mapping, got %s", kindName(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := join(path, k.Value)
		h, ok := handlers[k.Value]
		if !ok {
			return p.errf(k, path, "unknown field %q (known: %s)", k.Value, strings.Join(sortedKeys(handlers), ", "))
		}
		if seen[k.Value] {
			return p.errf(k, path, "field %q given twice", k.Value)
		}
		seen[k.Value] = true
		if err := h(v, sub); err != nil {
			return err
		}
	}
	for _, r := range required {
		if !seen[r] {
			return p.errf(n, path, "missing field %q", r)
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

func (p *parser) scenario(n *yaml.Node, s *Scenario) error {
	err := p.fields(n, "", map[string]func(*yaml.Node, string) error{
		"name": func(v *yaml.Node, path string) error { return p.str(v, path, &s.Name) },
		"config": func(v *yaml.Node, path string) error {
			return p.paths(v, path, &s.Config)
		},
		"manifests": func(v *yaml.Node, path string) error { return p.paths(v, path, &s.Manifests) },
		"cloud":     func(v *yaml.Node, path string) error { return p.cloud(v, path, &s.Cloud) },
		"steps":     func(v *yaml.Node, path string) error { return p.steps(v, path, &s.Steps) },
		"expect":    func(v *yaml.Node, path string) error { return p.expect(v, path, &s.Expect) },
	}, "name", "steps")
	if err != nil {
		return err
	}
	if s.Name == "" {
		return p.errf(n, "name", "must not be empty")
	}
	return nil
}

func (p *parser) scalar(v *yaml.Node, path string) error {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return p.errf(v, path, "want a value, got %s", kindName(v))
	}
	return nil
}

func (p *parser) str(v *yaml.Node, path string, out *string) error {
	if err := p.scalar(v, path); err != nil {
		return err
	}
	*out = v.Value
	return nil
}

func (p *parser) nonEmpty(v *yaml.Node, path string, out *string) error {
	if err := p.str(v, path, out); err != nil {
		return err
	}
	if strings.TrimSpace(*out) == "" {
		return p.errf(v, path, "must not be empty")
	}
	return nil
}

func (p *parser) integer(v *yaml.Node, path string, min int, out *int) error {
	if err := p.scalar(v, path); err != nil {
		return err
	}
	var i int
	if err := v.Decode(&i); err != nil {
		return p.errf(v, path, "want a whole number, got %q", v.Value)
	}
	if i < min {
		return p.errf(v, path, "%d: want at least %d", i, min)
	}
	*out = i
	return nil
}

func (p *parser) number(v *yaml.Node, path string, out *float64) error {
	if err := p.scalar(v, path); err != nil {
		return err
	}
	var f float64
	if err := v.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return p.errf(v, path, "want a number, got %q", v.Value)
	}
	*out = f
	return nil
}

func (p *parser) duration(v *yaml.Node, path string, out *time.Duration) error {
	if err := p.scalar(v, path); err != nil {
		return err
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		return p.errf(v, path, "want a duration such as 30s or 5m, got %q", v.Value)
	}
	if d < 0 {
		return p.errf(v, path, "%s: must not be negative", d)
	}
	*out = d
	return nil
}

func (p *parser) list(v *yaml.Node, path string, each func(i int, item *yaml.Node, path string) error) error {
	if v.Kind != yaml.SequenceNode {
		return p.errf(v, path, "want a list, got %s", kindName(v))
	}
	for i, item := range v.Content {
		if err := each(i, item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// path resolves a file path against the scenario's directory.
func (p *parser) path(v *yaml.Node, path string, out *string) error {
	var s string
	if err := p.nonEmpty(v, path, &s); err != nil {
		return err
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.dir, s)
	}
	*out = s
	return nil
}

func (p *parser) paths(v *yaml.Node, path string, out *[]string) error {
	return p.list(v, path, func(_ int, item *yaml.Node, path string) error {
		var s string
		if err := p.path(item, path, &s); err != nil {
			return err
		}
		*out = append(*out, s)
		return nil
	})
}

func (p *parser) cloud(n *yaml.Node, path string, c *Cloud) error {
	return p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"zones": func(v *yaml.Node, path string) error {
			return p.list(v, path, func(_ int, item *yaml.Node, path string) error {
				var z string
				if err := p.nonEmpty(item, path, &z); err != nil {
					return err
				}
				if slices.Contains(c.Zones, z) {
					return p.errf(item, path, "zone %q listed twice", z)
				}
				c.Zones = append(c.Zones, z)
				return nil
			})
		},
		"bootDelay": func(v *yaml.Node, path string) error { return p.duration(v, path, &c.BootDelay) },
		"seed": func(v *yaml.Node, path string) error {
			var i int
			if err := p.integer(v, path, 0, &i); err != nil {
				return err
			}
			c.Seed = uint64(i)
			return nil
		},
	})
}

func (p *parser) steps(v *yaml.Node, path string, out *[]Step) error {
	if v.Kind == yaml.SequenceNode && len(v.Content) == 0 {
		return p.errf(v, path, "no steps")
	}
	return p.list(v, path, func(_ int, item *yaml.Node, path string) error {
		st, err := p.step(item, path)
		if err != nil {
			return err
		}
		*out = append(*out, st)
		return nil
	})
}

// step parses one step: a mapping whose first key is the step's kind; a
// waitFor step may also carry a timeout.
func (p *parser) step(n *yaml.Node, path string) (Step, error) {
	st := Step{Line: n.Line}
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return st, p.errf(n, path, "want a step (one of %s), got %s", strings.Join(StepKinds, ", "), kindName(n))
	}
	var kinds []*yaml.Node
	for i := 0; i < len(n.Content); i += 2 {
		if slices.Contains(StepKinds, n.Content[i].Value) {
			kinds = append(kinds, n.Content[i])
		}
	}
	switch {
	case len(kinds) == 0:
		k := n.Content[0]
		return st, p.errf(k, path, "unknown step %q (known: %s)", k.Value, strings.Join(StepKinds, ", "))
	case len(kinds) > 1:
		return st, p.errf(kinds[1], path, "one step per list item: %s and %s", kinds[0].Value, kinds[1].Value)
	}
	st.Kind = kinds[0].Value
	handlers := map[string]func(*yaml.Node, string) error{}
	sub := func(v *yaml.Node, path string) error { return nil }
	switch st.Kind {
	case KindScale:
		sub = func(v *yaml.Node, path string) error { st.Scale = &Scale{}; return p.scale(v, path, st.Scale) }
	case KindApply:
		sub = func(v *yaml.Node, path string) error { return p.path(v, path, &st.Apply) }
	case KindDelete:
		sub = func(v *yaml.Node, path string) error { st.Delete = &Delete{}; return p.delete(v, path, st.Delete) }
	case KindWaitFor:
		// The timeout may sit inside the condition ({pods: {...}, timeout: 2m},
		// as the issue writes it) or beside it, as a sibling key of the step.
		var timeoutNode *yaml.Node
		st.WaitFor = &WaitFor{Timeout: DefaultTimeout}
		sub = func(v *yaml.Node, path string) error { return p.waitFor(v, path, st.WaitFor, &timeoutNode) }
		handlers["timeout"] = func(v *yaml.Node, path string) error {
			if timeoutNode != nil {
				return p.errf(v, path, "timeout given twice (also at line %d)", timeoutNode.Line)
			}
			timeoutNode = v
			return p.timeout(v, path, &st.WaitFor.Timeout)
		}
	case KindInterrupt:
		sub = func(v *yaml.Node, path string) error {
			st.Interrupt = &Interrupt{Node: "any", Notice: 2 * time.Minute}
			return p.interrupt(v, path, st.Interrupt)
		}
	case KindCapacity:
		sub = func(v *yaml.Node, path string) error {
			st.Capacity = &Capacity{}
			return p.capacity(v, path, st.Capacity)
		}
	case KindAdvance:
		sub = func(v *yaml.Node, path string) error { return p.positive(v, path, &st.Advance) }
	case KindSleep:
		sub = func(v *yaml.Node, path string) error { return p.positive(v, path, &st.Sleep) }
	}
	handlers[st.Kind] = sub
	return st, p.fields(n, path, handlers)
}

func (p *parser) positive(v *yaml.Node, path string, out *time.Duration) error {
	if err := p.duration(v, path, out); err != nil {
		return err
	}
	if *out == 0 {
		return p.errf(v, path, "must be more than 0")
	}
	return nil
}

// namespaced splits "namespace/name" ("name" alone: default).
func (p *parser) namespaced(v *yaml.Node, path string, ns, name *string) error {
	var s string
	if err := p.nonEmpty(v, path, &s); err != nil {
		return err
	}
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		a, b = "default", s
	}
	if a == "" || b == "" || strings.Contains(b, "/") {
		return p.errf(v, path, "want namespace/name, got %q", s)
	}
	*ns, *name = a, b
	return nil
}

func (p *parser) scale(n *yaml.Node, path string, s *Scale) error {
	return p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"deployment": func(v *yaml.Node, path string) error { return p.namespaced(v, path, &s.Namespace, &s.Name) },
		"replicas":   func(v *yaml.Node, path string) error { return p.integer(v, path, 0, &s.Replicas) },
	}, "deployment", "replicas")
}

func (p *parser) delete(n *yaml.Node, path string, d *Delete) error {
	var name string
	var nameNode *yaml.Node
	err := p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"kind": func(v *yaml.Node, path string) error { return p.nonEmpty(v, path, &d.Kind) },
		"name": func(v *yaml.Node, path string) error { nameNode = v; return p.nonEmpty(v, path, &name) },
	}, "kind", "name")
	if err != nil {
		return err
	}
	if ns, nm, ok := strings.Cut(name, "/"); ok {
		if ns == "" || nm == "" || strings.Contains(nm, "/") {
			return p.errf(nameNode, join(path, "name"), "want name or namespace/name, got %q", name)
		}
		d.Namespace, d.Name = ns, nm
	} else {
		d.Name = name
	}
	return nil
}

func (p *parser) selector(v *yaml.Node, path string, out *string) error {
	if err := p.nonEmpty(v, path, out); err != nil {
		return err
	}
	if _, err := labels.Parse(*out); err != nil {
		return p.errf(v, path, "label selector %q: %v", *out, err)
	}
	return nil
}

// timeout parses a waitFor's timeout: a positive duration.
func (p *parser) timeout(v *yaml.Node, path string, out *time.Duration) error {
	if err := p.duration(v, path, out); err != nil {
		return err
	}
	if *out == 0 {
		return p.errf(v, path, "must be more than 0")
	}
	return nil
}

// waitFor parses a waitFor's condition; a timeout inside it is recorded in
// *timeoutNode so that a second one beside the condition is an error.
func (p *parser) waitFor(n *yaml.Node, path string, w *WaitFor, timeoutNode **yaml.Node) error {
	err := p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"timeout": func(v *yaml.Node, path string) error {
			if *timeoutNode != nil {
				return p.errf(v, path, "timeout given twice (also at line %d)", (*timeoutNode).Line)
			}
			*timeoutNode = v
			return p.timeout(v, path, &w.Timeout)
		},
		"pods": func(v *yaml.Node, path string) error {
			w.Pods = &PodsCondition{}
			return p.podsCondition(v, path, w.Pods)
		},
		"nodes": func(v *yaml.Node, path string) error {
			w.Nodes = &NodesCondition{}
			return p.nodesCondition(v, path, w.Nodes, true)
		},
		"interruptionsHandled": p.count(&w.InterruptionsHandled),
		"consolidationActions": p.count(&w.ConsolidationActions),
		"pricePerHour": func(v *yaml.Node, path string) error {
			w.PricePerHour = &Range{}
			if err := p.fields(v, path, p.rangeFields(w.PricePerHour, false)); err != nil {
				return err
			}
			return p.checkRange(v, path, *w.PricePerHour, true)
		},
	})
	if err != nil {
		return err
	}
	set := 0
	for _, b := range []bool{w.Pods != nil, w.Nodes != nil, w.InterruptionsHandled != nil, w.ConsolidationActions != nil, w.PricePerHour != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return p.errf(n, path, "want exactly one of pods, nodes, interruptionsHandled, consolidationActions and pricePerHour")
	}
	return nil
}

func (p *parser) podsCondition(n *yaml.Node, path string, c *PodsCondition) error {
	intp := func(out **int) func(*yaml.Node, string) error {
		return func(v *yaml.Node, path string) error {
			var i int
			if err := p.integer(v, path, 0, &i); err != nil {
				return err
			}
			*out = &i
			return nil
		}
	}
	err := p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"selector": func(v *yaml.Node, path string) error { return p.selector(v, path, &c.Selector) },
		"running":  intp(&c.Running),
		"pending":  intp(&c.Pending),
	}, "selector")
	if err != nil {
		return err
	}
	if c.Running == nil && c.Pending == nil {
		return p.errf(n, path, "want running or pending")
	}
	return nil
}

// nodesCondition parses {nodePool, capacityType, min, max, count}; a
// bound is required when needBound.
func (p *parser) nodesCondition(n *yaml.Node, path string, c *NodesCondition, needBound bool) error {
	handlers := p.rangeFields(&c.Range, true)
	handlers["nodePool"] = func(v *yaml.Node, path string) error { return p.nonEmpty(v, path, &c.NodePool) }
	handlers["capacityType"] = func(v *yaml.Node, path string) error { return p.capacityType(v, path, &c.CapacityType) }
	if err := p.fields(n, path, handlers); err != nil {
		return err
	}
	return p.checkRange(n, path, c.Range, needBound)
}

func (p *parser) capacityType(v *yaml.Node, path string, out *string) error {
	if err := p.nonEmpty(v, path, out); err != nil {
		return err
	}
	if *out != "spot" && *out != "on-demand" {
		return p.errf(v, path, "capacity type %q: want spot or on-demand", *out)
	}
	return nil
}

// rangeFields are min, max and (for counts) count, which sets both.
func (p *parser) rangeFields(r *Range, whole bool) map[string]func(*yaml.Node, string) error {
	bound := func(out **float64) func(*yaml.Node, string) error {
		return func(v *yaml.Node, path string) error {
			var f float64
			if whole {
				var i int
				if err := p.integer(v, path, 0, &i); err != nil {
					return err
				}
				f = float64(i)
			} else if err := p.number(v, path, &f); err != nil {
				return err
			}
			*out = &f
			return nil
		}
	}
	h := map[string]func(*yaml.Node, string) error{"min": bound(&r.Min), "max": bound(&r.Max)}
	if whole {
		h["count"] = func(v *yaml.Node, path string) error {
			if err := bound(&r.Min)(v, path); err != nil {
				return err
			}
			r.Max = r.Min
			return nil
		}
	}
	return h
}

func (p *parser) checkRange(n *yaml.Node, path string, r Range, need bool) error {
	if need && r.Min == nil && r.Max == nil {
		return p.errf(n, path, "want min, max or count")
	}
	if r.Min != nil && r.Max != nil && *r.Min > *r.Max {
		return p.errf(n, path, "min %s is more than max %s", num(*r.Min), num(*r.Max))
	}
	return nil
}

func (p *parser) interrupt(n *yaml.Node, path string, in *Interrupt) error {
	err := p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"kind": func(v *yaml.Node, path string) error {
			if err := p.nonEmpty(v, path, &in.Kind); err != nil {
				return err
			}
			if !slices.Contains(InterruptKinds, in.Kind) {
				return p.errf(v, path, "unknown interruption %q (known: %s)", in.Kind, strings.Join(InterruptKinds, ", "))
			}
			return nil
		},
		"node":         func(v *yaml.Node, path string) error { return p.nonEmpty(v, path, &in.Node) },
		"capacityType": func(v *yaml.Node, path string) error { return p.capacityType(v, path, &in.CapacityType) },
		"notice":       func(v *yaml.Node, path string) error { return p.duration(v, path, &in.Notice) },
	}, "kind")
	if err != nil {
		return err
	}
	if in.CapacityType != "" && in.Node != "any" {
		return p.errf(n, path, "capacityType chooses among nodes: only with node: any")
	}
	return nil
}

func (p *parser) capacity(n *yaml.Node, path string, c *Capacity) error {
	err := p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"exhaust": func(v *yaml.Node, path string) error {
			if v.Kind == yaml.SequenceNode && len(v.Content) == 0 {
				return p.errf(v, path, "no pools")
			}
			return p.list(v, path, func(_ int, item *yaml.Node, path string) error {
				pool := Pool{InstanceType: "*", Zone: "*"}
				err := p.fields(item, path, map[string]func(*yaml.Node, string) error{
					"instanceType": func(v *yaml.Node, path string) error { return p.nonEmpty(v, path, &pool.InstanceType) },
					"capacityType": func(v *yaml.Node, path string) error { return p.capacityType(v, path, &pool.CapacityType) },
					"zone":         func(v *yaml.Node, path string) error { return p.nonEmpty(v, path, &pool.Zone) },
				}, "capacityType")
				c.Exhaust = append(c.Exhaust, pool)
				return err
			})
		},
		"restore": func(v *yaml.Node, path string) error {
			var s string
			if err := p.str(v, path, &s); err != nil {
				return err
			}
			if s != "all" {
				return p.errf(v, path, "want all, got %q", s)
			}
			c.Restore = true
			return nil
		},
	})
	if err != nil {
		return err
	}
	if c.Restore == (len(c.Exhaust) > 0) {
		return p.errf(n, path, "want exactly one of exhaust and restore")
	}
	return nil
}

// count parses a count: a number (exactly) or {min, max, count}.
func (p *parser) count(out **Range) func(*yaml.Node, string) error {
	return func(v *yaml.Node, path string) error {
		r := &Range{}
		*out = r
		if v.Kind == yaml.ScalarNode {
			var i int
			if err := p.integer(v, path, 0, &i); err != nil {
				return err
			}
			f := float64(i)
			r.Min, r.Max = &f, &f
			return nil
		}
		if err := p.fields(v, path, p.rangeFields(r, true)); err != nil {
			return err
		}
		return p.checkRange(v, path, *r, true)
	}
}

// podsCount parses {selector, min, max, count}.
func (p *parser) podsCount(v *yaml.Node, path string, c *PodsCount) error {
	h := p.rangeFields(&c.Range, true)
	h["selector"] = func(v *yaml.Node, path string) error { return p.selector(v, path, &c.Selector) }
	if err := p.fields(v, path, h, "selector"); err != nil {
		return err
	}
	return p.checkRange(v, path, c.Range, true)
}

func (p *parser) expect(n *yaml.Node, path string, e *Expect) error {
	count := p.count
	return p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"pdbViolations":        count(&e.PDBViolations),
		"duplicateLaunches":    count(&e.DuplicateLaunches),
		"unschedulable":        count(&e.Unschedulable),
		"interruptionsHandled": count(&e.InterruptionsHandled),
		"consolidationActions": count(&e.ConsolidationActions),
		"nodesLaunched":        count(&e.NodesLaunched),
		"podsRunningAtEnd": func(v *yaml.Node, path string) error {
			e.PodsRunningAtEnd = &PodsCount{}
			return p.podsCount(v, path, e.PodsRunningAtEnd)
		},
		"podsEvicted": func(v *yaml.Node, path string) error {
			e.PodsEvicted = &PodsCount{}
			return p.podsCount(v, path, e.PodsEvicted)
		},
		"pricePerHourAtEnd": func(v *yaml.Node, path string) error {
			e.PricePerHourAtEnd = &Range{}
			if err := p.fields(v, path, p.rangeFields(e.PricePerHourAtEnd, false)); err != nil {
				return err
			}
			return p.checkRange(v, path, *e.PricePerHourAtEnd, true)
		},
		"nodesAtEnd": func(v *yaml.Node, path string) error {
			e.NodesAtEnd = &NodesCondition{}
			return p.nodesCondition(v, path, e.NodesAtEnd, true)
		},
	})
}

// Peak is the most replicas any scale step asks for (0: none scales).
func (s *Scenario) Peak() int {
	peak := 0
	for _, st := range s.Steps {
		if st.Scale != nil {
			peak = max(peak, st.Scale.Replicas)
		}
	}
	return peak
}

// WithPeak shortens (or lengthens) a scenario: every count equal to the
// peak (Peak) in scale steps, waitFor pods steps and podsRunningAtEnd
// becomes n. Other counts stay as written.
func (s *Scenario) WithPeak(n int) {
	peak := s.Peak()
	if peak == 0 || n == peak {
		return
	}
	swap := func(p *int) {
		if p != nil && *p == peak {
			*p = n
		}
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Scale != nil {
			swap(&st.Scale.Replicas)
		}
		if st.WaitFor != nil && st.WaitFor.Pods != nil {
			swap(st.WaitFor.Pods.Running)
			swap(st.WaitFor.Pods.Pending)
		}
	}
	if e := s.Expect.PodsRunningAtEnd; e != nil {
		for _, b := range []*float64{e.Min, e.Max} {
			if b != nil && *b == float64(peak) {
				*b = float64(n)
			}
		}
	}
}
