// Package scenario is the format of `make run`'s scenarios: one YAML file
// naming the configuration, the manifests applied at the start, the local
// cloud's options, the steps to play and what must hold at the end. It
// only parses and validates (no I/O beyond reading the file): the file's
// fields are this package's types, named and checked by struct tags
// (decode.go); a field or step it does not know is an error naming the
// file, the line and the field path, so a typo never silently changes
// what a scenario tests. The step kinds are one table (steps.go), which
// both decodes and plays them (through Player).
package scenario

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Scenario is one parsed scenario file. Paths are absolute (the file's
// relative paths resolved against its directory).
type Scenario struct {
	Name string `yaml:"name" check:"required,nonempty"`
	// File is the scenario file's path.
	File string `yaml:"-"`
	// Config are NodePool and EC2NodeClass files (empty: the shared
	// examples nodepool-default.yaml and ec2nodeclass-default.yaml).
	Config []string `yaml:"config" check:"path"`
	// Manifests are applied at the start, in order (any Kubernetes objects).
	Manifests []string `yaml:"manifests" check:"path"`
	Cloud     Cloud    `yaml:"cloud"`
	Steps     []Step   `yaml:"steps" check:"required,empty=no steps"`
	Expect    Expect   `yaml:"expect"`
}

// Cloud are the local cloud's options.
type Cloud struct {
	// Region is the local cloud's region (default us-east-1); zones
	// default to its a, b and c.
	Region    string        `yaml:"region" check:"nonempty"`
	Zones     []string      `yaml:"zones" check:"nonempty,unique=zone"`
	BootDelay time.Duration `yaml:"bootDelay"`
	Seed      uint64        `yaml:"seed"`
	// MissingOfferings are instance types EC2 does not offer in a zone.
	MissingOfferings []Offering `yaml:"missingOfferings" check:"unique=offering"`
	// Reservations are capacity reservations the account holds (the AWS
	// front emulates them).
	Reservations []Reservation `yaml:"reservations" check:"unique=reservation"`
}

// Reservation is a capacity reservation of Count instances of a type in
// a zone: an On-Demand Capacity Reservation, or with Block a Capacity
// Block for ML; EndsAfter (from the scenario's start) ends it (0: never).
type Reservation struct {
	ID           string        `yaml:"id" check:"required,nonempty"`
	InstanceType string        `yaml:"instanceType" check:"required,nonempty"`
	Zone         string        `yaml:"zone" check:"required,nonempty"`
	Count        int           `yaml:"count" check:"required"`
	Block        bool          `yaml:"block" check:"word=true"`
	EndsAfter    time.Duration `yaml:"endsAfter"`
}

// Offering is an instance type in a zone.
type Offering struct {
	InstanceType string `yaml:"instanceType" check:"required,nonempty"`
	Zone         string `yaml:"zone" check:"required,nonempty"`
}

func (c *Cloud) check() string {
	for _, z := range c.Zones {
		if c.Region != "" && !strings.HasPrefix(z, c.Region) {
			return fmt.Sprintf("zone %s is not in region %s", z, c.Region)
		}
	}
	for _, o := range c.MissingOfferings {
		zones := c.Zones
		if len(zones) == 0 {
			region := c.Region
			if region == "" {
				region = "us-east-1"
			}
			zones = []string{region + "a", region + "b", region + "c"}
		}
		if !slices.Contains(zones, o.Zone) {
			return fmt.Sprintf("missingOfferings: zone %s is not one of the cloud's (%s)", o.Zone, strings.Join(zones, ", "))
		}
	}
	return ""
}

// Expect is what must hold when the scenario ends; nil fields are not
// checked.
type Expect struct {
	PDBViolations        *Range     `yaml:"pdbViolations" check:"whole,bound"`
	DuplicateLaunches    *Range     `yaml:"duplicateLaunches" check:"whole,bound"`
	Unschedulable        *Range     `yaml:"unschedulable" check:"whole,bound"`
	InterruptionsHandled *Range     `yaml:"interruptionsHandled" check:"whole,bound"`
	ConsolidationActions *Range     `yaml:"consolidationActions" check:"whole,bound"`
	NodesLaunched        *Range     `yaml:"nodesLaunched" check:"whole,bound"`
	PodsRunningAtEnd     *PodsCount `yaml:"podsRunningAtEnd"`
	// PodsEvicted counts the pods of the selector evicted through the
	// Eviction API during the scenario (a drain moving them).
	PodsEvicted       *PodsCount      `yaml:"podsEvicted"`
	PricePerHourAtEnd *Range          `yaml:"pricePerHourAtEnd" check:"bound"`
	NodesAtEnd        *NodesCondition `yaml:"nodesAtEnd"`
	// Launched counts the NodeClaims launched during the scenario that
	// match each entry (its instance type, zone and price, those set).
	Launched []LaunchedCount `yaml:"launched"`
}

// LaunchedCount counts the launched NodeClaims of an instance type, in a
// zone, of a capacity type, at a price per hour (those set; at least one).
type LaunchedCount struct {
	InstanceType string   `yaml:"instanceType" check:"nonempty"`
	Zone         string   `yaml:"zone" check:"nonempty"`
	CapacityType string   `yaml:"capacityType" check:"nodeCapacityType"`
	PricePerHour *float64 `yaml:"pricePerHour"`
	Range        `yaml:",inline" check:"whole,bound"`
}

func (c *LaunchedCount) check() string {
	if c.InstanceType == "" && c.Zone == "" && c.CapacityType == "" && c.PricePerHour == nil {
		return "want instanceType, zone, capacityType or pricePerHour"
	}
	return ""
}

// Matches says whether a NodeClaim launched as typ in zone, of capacity
// type ct, at price matches (a price within a millionth of a dollar).
func (c *LaunchedCount) Matches(typ, zone, ct string, price float64) bool {
	return (c.InstanceType == "" || c.InstanceType == typ) && (c.Zone == "" || c.Zone == zone) &&
		(c.CapacityType == "" || c.CapacityType == ct) &&
		(c.PricePerHour == nil || math.Abs(*c.PricePerHour-price) < 1e-6)
}

func (c *LaunchedCount) String() string {
	var parts []string
	if c.InstanceType != "" {
		parts = append(parts, c.InstanceType)
	}
	if c.Zone != "" {
		parts = append(parts, "in "+c.Zone)
	}
	if c.PricePerHour != nil {
		parts = append(parts, fmt.Sprintf("at $%g/h", *c.PricePerHour))
	}
	return strings.Join(append(parts, c.Range.String()), " ")
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
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: path, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &Error{File: path, Msg: "empty scenario: want a mapping with name and steps"}
	}
	s := &Scenario{}
	d := &decoder{file: path, dir: filepath.Dir(abs)}
	if err := d.mapping(doc.Content[0], "", reflect.ValueOf(s).Elem()); err != nil {
		return nil, err
	}
	s.File = path
	return s, nil
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
