package scenario

import (
	"fmt"
	"math"
	"strings"
)

// Range is an inclusive bound on a number; nil ends are open. In a file it
// is {min, max} and, for counts, {count} (min = max) or a plain number.
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

// PodsCondition holds when the pods the selector matches (not being
// deleted) number as many Running (and Ready) as asked, and as many
// Pending when Pending is set.
type PodsCondition struct {
	Selector string `yaml:"selector" check:"required,selector"`
	Running  *int   `yaml:"running"`
	Pending  *int   `yaml:"pending"`
}

func (c *PodsCondition) check() string {
	if c.Running == nil && c.Pending == nil {
		return "want running or pending"
	}
	return ""
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
	NodePool     string `yaml:"nodePool" check:"nonempty"`
	CapacityType string `yaml:"capacityType" check:"nodeCapacityType"`
	Range        `yaml:",inline" check:"whole,bound"`
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

// PodsCount counts the Running pods the selector matches.
type PodsCount struct {
	Selector string `yaml:"selector" check:"required,selector"`
	Range    `yaml:",inline" check:"whole,bound"`
}
