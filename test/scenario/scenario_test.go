package scenario

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/test/localcloud/cloudfault"
)

const full = `name: spot-interruption-with-pdb
config: [nodepool.yaml, /abs/ec2nodeclass.yaml]
manifests: [inflate.yaml, pdb.yaml]
cloud: {zones: [us-east-1a, us-east-1b, us-east-1c], bootDelay: 2s, seed: 7}
steps:
  - scale: {deployment: default/inflate, replicas: 30}
  - apply: more.yaml
  - delete: {kind: Deployment, name: default/other}
  - waitFor: {pods: {selector: app=inflate, running: 30}, timeout: 2m}
  - waitFor: {nodes: {nodePool: default, max: 2}, timeout: 10m}
  - interrupt: {kind: spot, node: any}
  - waitFor: {interruptionsHandled: 1}
  - waitFor: {consolidationActions: {min: 1}}
    timeout: 5m
  - capacity: {exhaust: [{instanceType: "*", capacityType: spot, zone: us-east-1a}]}
  - capacity: {restore: all}
  - advance: 5m
  - sleep: 10s
expect:
  pdbViolations: 0
  duplicateLaunches: 0
  unschedulable: 0
  consolidationActions: {min: 1}
  podsRunningAtEnd: {selector: app=inflate, count: 3}
  podsEvicted: {selector: app=inflate, max: 5}
  pricePerHourAtEnd: {max: 0.10}
  nodesAtEnd: {max: 2}
`

func TestParseFull(t *testing.T) {
	s, err := Parse("dir/s.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("dir")
	if s.Name != "spot-interruption-with-pdb" {
		t.Errorf("name %q", s.Name)
	}
	if want := []string{filepath.Join(dir, "nodepool.yaml"), "/abs/ec2nodeclass.yaml"}; strings.Join(s.Config, ",") != strings.Join(want, ",") {
		t.Errorf("config %v, want %v (relative to the file)", s.Config, want)
	}
	if len(s.Manifests) != 2 || s.Manifests[1] != filepath.Join(dir, "pdb.yaml") {
		t.Errorf("manifests %v", s.Manifests)
	}
	if len(s.Cloud.Zones) != 3 || s.Cloud.BootDelay != 2*time.Second || s.Cloud.Seed != 7 {
		t.Errorf("cloud %+v", s.Cloud)
	}
	kinds := []string{}
	for _, st := range s.Steps {
		kinds = append(kinds, st.Kind)
	}
	if got := strings.Join(kinds, " "); got != "scale apply delete waitFor waitFor interrupt waitFor waitFor capacity capacity advance sleep" {
		t.Fatalf("steps %s", got)
	}
	st := s.Steps
	if st[0].Scale.Namespace != "default" || st[0].Scale.Name != "inflate" || st[0].Scale.Replicas != 30 || st[0].Line != 6 {
		t.Errorf("scale %+v line %d", st[0].Scale, st[0].Line)
	}
	if st[1].Apply != filepath.Join(dir, "more.yaml") {
		t.Errorf("apply %s", st[1].Apply)
	}
	if d := st[2].Delete; d.Kind != "Deployment" || d.Namespace != "default" || d.Name != "other" {
		t.Errorf("delete %+v", d)
	}
	if w := st[3].WaitFor; w.Pods == nil || *w.Pods.Running != 30 || w.Pods.Selector != "app=inflate" || w.Timeout != 2*time.Minute {
		t.Errorf("waitFor pods %+v", w)
	}
	if w := st[4].WaitFor; w.Nodes == nil || w.Nodes.NodePool != "default" || *w.Nodes.Max != 2 || w.Nodes.Min != nil || w.Timeout != 10*time.Minute {
		t.Errorf("waitFor nodes %+v", w)
	}
	if in := st[5].Interrupt; in.Kind != cloudfault.Spot || in.Node != "any" || in.Notice != 2*time.Minute {
		t.Errorf("interrupt %+v", in)
	}
	if w := st[6].WaitFor; !w.InterruptionsHandled.Holds(1) || w.InterruptionsHandled.Holds(2) || w.Pods != nil {
		t.Errorf("waitFor interruptions %+v", w)
	}
	if w := st[7].WaitFor; !w.ConsolidationActions.Holds(5) || w.ConsolidationActions.Holds(0) || w.Timeout != 5*time.Minute {
		t.Errorf("waitFor consolidations %+v", w)
	}
	st = append(st[:6], st[8:]...)
	if c := st[6].Capacity; len(c.Exhaust) != 1 || c.Exhaust[0] != (Pool{"*", "spot", "us-east-1a"}) || c.Restore {
		t.Errorf("capacity %+v", c)
	}
	if !st[7].Capacity.Restore || st[8].Advance != 5*time.Minute || st[9].Sleep != 10*time.Second {
		t.Errorf("restore/advance/sleep %+v %+v %+v", st[7], st[8], st[9])
	}
	e := s.Expect
	if !e.PDBViolations.Holds(0) || e.PDBViolations.Holds(1) || !e.ConsolidationActions.Holds(3) || e.ConsolidationActions.Holds(0) {
		t.Errorf("expect counts %+v %+v", e.PDBViolations, e.ConsolidationActions)
	}
	if e.PodsRunningAtEnd.Selector != "app=inflate" || !e.PodsRunningAtEnd.Holds(3) || e.PodsRunningAtEnd.Holds(4) {
		t.Errorf("podsRunningAtEnd %+v", e.PodsRunningAtEnd)
	}
	if e.PodsEvicted.Selector != "app=inflate" || !e.PodsEvicted.Holds(5) || e.PodsEvicted.Holds(6) {
		t.Errorf("podsEvicted %+v", e.PodsEvicted)
	}
	if !e.PricePerHourAtEnd.Holds(0.1) || e.PricePerHourAtEnd.Holds(0.1001) || !e.NodesAtEnd.Holds(2) || e.NodesAtEnd.Holds(3) {
		t.Errorf("price/nodes %+v %+v", e.PricePerHourAtEnd, e.NodesAtEnd)
	}
	if e.InterruptionsHandled != nil || e.NodesLaunched != nil {
		t.Error("unset expectations must stay nil")
	}
}

// Every mistake is an error naming the file, the line and the field path.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown top-level field", "name: x\nstep: []\n", `s.yaml:2: unknown field "step" (known: cloud, config, expect, manifests, name, steps)`},
		{"missing steps", "name: x\n", `s.yaml:1: missing field "steps"`},
		{"missing name", "steps: [{sleep: 1s}]\n", `s.yaml:1: missing field "name"`},
		{"empty name", "name: ''\nsteps: [{sleep: 1s}]\n", `s.yaml:1: name: must not be empty`},
		{"no steps", "name: x\nsteps: []\n", `s.yaml:2: steps: no steps`},
		{"not a mapping", "- a\n", `s.yaml:1: want a mapping, got a list`},
		{"empty file", "", `s.yaml: empty scenario`},
		{"bad yaml", "name: [x\n", `s.yaml: `},
		{"unknown step", "name: x\nsteps:\n  - sleep: 1s\n  - frobnicate: {}\n", `s.yaml:4: steps[1]: unknown step "frobnicate" (known: scale, apply, delete, waitFor, interrupt, capacity, advance, sleep)`},
		{"two steps in one item", "name: x\nsteps:\n  - sleep: 1s\n    advance: 1m\n", `s.yaml:4: steps[0]: one step per list item: sleep and advance`},
		{"timeout on a non-wait step", "name: x\nsteps:\n  - sleep: 1s\n    timeout: 1m\n", `s.yaml:4: steps[0]: unknown field "timeout" (known: sleep)`},
		{"unknown field in a step", "name: x\nsteps:\n  - scale: {deployment: a/b, replicas: 3, replica: 4}\n", `s.yaml:3: steps[0].scale: unknown field "replica" (known: deployment, replicas)`},
		{"negative replicas", "name: x\nsteps:\n  - scale:\n      deployment: a/b\n      replicas: -1\n", `s.yaml:5: steps[0].scale.replicas: -1: want at least 0`},
		{"replicas not a number", "name: x\nsteps:\n  - scale: {deployment: a/b, replicas: many}\n", `steps[0].scale.replicas: want a whole number, got "many"`},
		{"bad deployment", "name: x\nsteps:\n  - scale: {deployment: a/b/c, replicas: 1}\n", `steps[0].scale.deployment: want namespace/name, got "a/b/c"`},
		{"scale without replicas", "name: x\nsteps:\n  - scale: {deployment: a}\n", `s.yaml:3: steps[0].scale: missing field "replicas"`},
		{"bad duration", "name: x\nsteps:\n  - sleep: 10\n", `s.yaml:3: steps[0].sleep: want a duration such as 30s or 5m, got "10"`},
		{"zero advance", "name: x\nsteps:\n  - advance: 0s\n", `steps[0].advance: must be more than 0`},
		{"wait for both", "name: x\nsteps:\n  - waitFor: {pods: {selector: a=b, running: 1}, nodes: {max: 1}}\n", `steps[0].waitFor: want exactly one of pods, nodes, interruptionsHandled, consolidationActions, pricePerHour and regionFigures`},
		{"wait without a count", "name: x\nsteps:\n  - waitFor: {pods: {selector: a=b}}\n", `steps[0].waitFor.pods: want running or pending`},
		{"bad selector", "name: x\nsteps:\n  - waitFor: {pods: {selector: 'a in (', running: 1}}\n", `steps[0].waitFor.pods.selector: label selector "a in ("`},
		{"price wait without a bound", "name: x\nsteps:\n  - waitFor: {pricePerHour: {}}\n", `steps[0].waitFor.pricePerHour: want min, max or count`},
		{"unknown wait field", "name: x\nsteps:\n  - waitFor:\n      pods: {selector: a=b, runing: 1}\n", `s.yaml:4: steps[0].waitFor.pods: unknown field "runing" (known: pending, running, selector)`},
		{"nodes without a bound", "name: x\nsteps:\n  - waitFor: {nodes: {nodePool: default}}\n", `steps[0].waitFor.nodes: want min, max or count`},
		{"min above max", "name: x\nsteps:\n  - waitFor: {nodes: {min: 3, max: 2}}\n", `steps[0].waitFor.nodes: min 3 is more than max 2`},
		{"timeout inside and beside", "name: x\nsteps:\n  - waitFor: {nodes: {max: 2}, timeout: 1m}\n    timeout: 2m\n", `s.yaml:4: steps[0].timeout: timeout given twice (also at line 3)`},
		{"zero timeout inside", "name: x\nsteps:\n  - waitFor: {nodes: {max: 2}, timeout: 0s}\n", `s.yaml:3: steps[0].waitFor.timeout: must be more than 0`},
		{"timeout alone", "name: x\nsteps:\n  - waitFor: {timeout: 1m}\n", `steps[0].waitFor: want exactly one of pods`},
		{"zero timeout", "name: x\nsteps:\n  - waitFor: {nodes: {max: 2}}\n    timeout: 0s\n", `s.yaml:4: steps[0].timeout: must be more than 0`},
		{"unknown interruption", "name: x\nsteps:\n  - interrupt: {kind: meteor}\n", `s.yaml:3: steps[0].interrupt.kind: unknown interruption "meteor" (known: spot, rebalance, scheduled-change, state-change, capacity-reservation)`},
		{"interrupt without kind", "name: x\nsteps:\n  - interrupt: {node: any}\n", `steps[0].interrupt: missing field "kind"`},
		{"capacity type choice on a named node", "name: x\nsteps:\n  - interrupt: {kind: spot, node: n1, capacityType: spot}\n", `steps[0].interrupt: capacityType chooses among nodes: only with node: any`},
		{"bad capacity type", "name: x\nsteps:\n  - capacity: {exhaust: [{capacityType: reserved}]}\n", `steps[0].capacity.exhaust[0].capacityType: capacity type "reserved": want spot or on-demand`},
		{"exhaust without capacity type", "name: x\nsteps:\n  - capacity: {exhaust: [{zone: us-east-1a}]}\n", `steps[0].capacity.exhaust[0]: missing field "capacityType"`},
		{"restore what", "name: x\nsteps:\n  - capacity: {restore: some}\n", `steps[0].capacity.restore: want all, got "some"`},
		{"capacity both", "name: x\nsteps:\n  - capacity: {restore: all, exhaust: [{capacityType: spot}]}\n", `steps[0].capacity: want exactly one of exhaust and restore`},
		{"unknown expectation", "name: x\nsteps: [{sleep: 1s}]\nexpect:\n  pdbViolation: 0\n", `s.yaml:4: expect: unknown field "pdbViolation" (known: consolidationActions, duplicateLaunches, interruptionsHandled, launched, nodesAtEnd, nodesLaunched, pdbViolations, podsEvicted, podsRunningAtEnd, pricePerHourAtEnd, unschedulable)`},
		{"podsEvicted without selector", "name: x\nsteps: [{sleep: 1s}]\nexpect:\n  podsEvicted: {count: 0}\n", `s.yaml:4: expect.podsEvicted: missing field "selector"`},
		{"negative expectation", "name: x\nsteps: [{sleep: 1s}]\nexpect: {pdbViolations: -1}\n", `expect.pdbViolations: -1: want at least 0`},
		{"price not a number", "name: x\nsteps: [{sleep: 1s}]\nexpect: {pricePerHourAtEnd: {max: cheap}}\n", `expect.pricePerHourAtEnd.max: want a number, got "cheap"`},
		{"price without a bound", "name: x\nsteps: [{sleep: 1s}]\nexpect: {pricePerHourAtEnd: {}}\n", `expect.pricePerHourAtEnd: want min, max or count`},
		{"pods running without selector", "name: x\nsteps: [{sleep: 1s}]\nexpect: {podsRunningAtEnd: {count: 3}}\n", `expect.podsRunningAtEnd: missing field "selector"`},
		{"duplicate field", "name: x\nname: y\nsteps: [{sleep: 1s}]\n", `s.yaml:2: field "name" given twice`},
		{"zone twice", "name: x\ncloud: {zones: [a, a]}\nsteps: [{sleep: 1s}]\n", `s.yaml:2: cloud.zones[1]: zone "a" listed twice`},
		{"unknown cloud field", "name: x\ncloud:\n  boot: 1s\nsteps: [{sleep: 1s}]\n", `s.yaml:3: cloud: unknown field "boot" (known: bootDelay, missingOfferings, region, reservations, seed, zones)`},
		{"zone outside the region", "name: x\ncloud: {region: eu-west-1, zones: [us-east-1a]}\nsteps: [{sleep: 1s}]\n", `cloud: zone us-east-1a is not in region eu-west-1`},
		{"missing offering in another zone", "name: x\ncloud: {region: eu-west-1, missingOfferings: [{instanceType: c5.large, zone: eu-west-1d}]}\nsteps: [{sleep: 1s}]\n", `cloud: missingOfferings: zone eu-west-1d is not one of the cloud's (eu-west-1a, eu-west-1b, eu-west-1c)`},
		{"missing offering without a type", "name: x\ncloud: {missingOfferings: [{zone: us-east-1a}]}\nsteps: [{sleep: 1s}]\n", `cloud.missingOfferings[0]: missing field "instanceType"`},
		{"launched without a filter", "name: x\nsteps: [{sleep: 1s}]\nexpect: {launched: [{count: 0}]}\n", `expect.launched[0]: want instanceType, zone, capacityType or pricePerHour`},
		{"launched without a bound", "name: x\nsteps: [{sleep: 1s}]\nexpect: {launched: [{zone: us-east-1a}]}\n", `expect.launched[0]: want min, max or count`},
		{"regionFigures not read", "name: x\nsteps:\n  - waitFor: {regionFigures: yes}\n", `steps[0].waitFor.regionFigures: want read, got "yes"`},
		{"config not a list", "name: x\nconfig: a.yaml\nsteps: [{sleep: 1s}]\n", `s.yaml:2: config: want a list, got "a.yaml"`},
		{"null value", "name: x\nsteps:\n  - apply:\n", `s.yaml:3: steps[0].apply: want a value, got nothing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestRangeString(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		r    Range
		want string
	}{
		{Range{Min: f(3), Max: f(3)}, "= 3"},
		{Range{Min: f(1), Max: f(2)}, "1..2"},
		{Range{Max: f(0.1)}, "<= 0.1"},
		{Range{Min: f(1)}, ">= 1"},
		{Range{}, "any"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestStepString(t *testing.T) {
	s, err := Parse("s.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"scale default/inflate to 30", "apply more.yaml", "delete Deployment default/other",
		"wait for pods app=inflate: 30 Running (at most 2m0s)", "wait for nodes nodePool default <= 2 (at most 10m0s)",
		"interrupt (spot) node any", "wait for interruptions handled = 1 (at most 2m0s)", "wait for consolidation actions >= 1 (at most 5m0s)", "capacity: exhaust * spot in us-east-1a", "capacity: restore all",
		"advance the functions' clock by 5m0s", "sleep 10s",
	}
	for i, st := range s.Steps {
		if got := st.String(); got != want[i] {
			t.Errorf("step %d: %q, want %q", i, got, want[i])
		}
	}
}

func TestWithPeak(t *testing.T) {
	doc := `name: x
steps:
  - scale: {deployment: inflate, replicas: 30}
  - waitFor: {pods: {selector: app=inflate, running: 30}}
  - scale: {deployment: inflate, replicas: 3}
  - waitFor: {pods: {selector: app=inflate, running: 3}}
expect:
  podsRunningAtEnd: {selector: app=inflate, min: 3, max: 30}
`
	s, err := Parse("x.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if s.Peak() != 30 {
		t.Fatalf("peak %d", s.Peak())
	}
	s.WithPeak(8)
	got := []int{s.Steps[0].Scale.Replicas, *s.Steps[1].WaitFor.Pods.Running, s.Steps[2].Scale.Replicas, *s.Steps[3].WaitFor.Pods.Running}
	if got[0] != 8 || got[1] != 8 || got[2] != 3 || got[3] != 3 {
		t.Errorf("counts %v, want [8 8 3 3]", got)
	}
	if *s.Expect.PodsRunningAtEnd.Min != 3 || *s.Expect.PodsRunningAtEnd.Max != 8 {
		t.Errorf("podsRunningAtEnd %s", s.Expect.PodsRunningAtEnd.Range)
	}
}

func TestParseRegionFields(t *testing.T) {
	s, err := Parse("s.yaml", []byte(`name: r
cloud:
  region: eu-west-1
  missingOfferings: [{instanceType: c5.large, zone: eu-west-1c}]
steps:
  - waitFor: {regionFigures: read}
expect:
  launched:
    - {instanceType: c5.large, zone: eu-west-1c, count: 0}
    - {pricePerHour: 0.10752, min: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Cloud.Region != "eu-west-1" || len(s.Cloud.MissingOfferings) != 1 || s.Cloud.MissingOfferings[0] != (Offering{"c5.large", "eu-west-1c"}) {
		t.Errorf("cloud %+v", s.Cloud)
	}
	if !s.Steps[0].WaitFor.RegionFigures {
		t.Errorf("waitFor %+v", s.Steps[0].WaitFor)
	}
	l := s.Expect.Launched
	if len(l) != 2 || !l[0].Matches("c5.large", "eu-west-1c", "spot", 0.1) || l[0].Matches("c5.large", "eu-west-1b", "spot", 0.1) ||
		!l[1].Matches("m5.large", "eu-west-1a", "on-demand", 0.10752) || l[1].Matches("m5.large", "eu-west-1a", "on-demand", 0.096) {
		t.Errorf("launched %+v", l)
	}
	if got := l[0].String(); got != "c5.large in eu-west-1c = 0" {
		t.Errorf("String %q", got)
	}
}
