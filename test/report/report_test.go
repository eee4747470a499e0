package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/test/scenario"
)

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct {
		p    float64
		want float64
	}{{50, 5}, {99, 10}, {100, 10}, {10, 1}, {1, 1}, {90, 9}} {
		if got := Percentile(xs, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty: want 0")
	}
	if xs[0] != 5 {
		t.Error("Percentile sorted its input")
	}
}

func TestDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		launches []Launch
		want     int
	}{
		{"none", []Launch{{NodeClaim: "a", Instances: []string{"i-1"}, Registered: true, Settled: true, Pods: 3}}, 0},
		{"two instances for one NodeClaim", []Launch{{NodeClaim: "a", Instances: []string{"i-1", "i-2"}, Registered: true, Settled: true, Pods: 1}}, 1},
		{"a node that never ran a pod", []Launch{{NodeClaim: "a", Instances: []string{"i-1"}, Registered: true, Settled: true}}, 1},
		{"still booting at the end", []Launch{{NodeClaim: "a", Instances: []string{"i-1"}, Registered: false, Settled: false}}, 0},
		{"never registered", []Launch{{NodeClaim: "a", Instances: []string{"i-1"}, Registered: false, Settled: true}}, 0},
		{"a static NodePool's node, launched for no pod", []Launch{{NodeClaim: "a", Instances: []string{"i-1"}, Registered: true, Settled: true, Static: true}}, 0},
		{"a static NodePool's node launched twice", []Launch{{NodeClaim: "a", Instances: []string{"i-1", "i-2"}, Registered: true, Settled: true, Static: true}}, 1},
		{"both kinds", []Launch{
			{NodeClaim: "a", Instances: []string{"i-1", "i-2", "i-3"}, Registered: true, Settled: true},
			{NodeClaim: "b", Instances: []string{"i-4"}, Registered: true, Settled: true, Pods: 2},
		}, 3},
	} {
		if got := Duplicates(tc.launches); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	doc := `name: x
steps: [{sleep: 1s}]
expect:
  pdbViolations: 0
  duplicateLaunches: 0
  consolidationActions: {min: 1}
  podsRunningAtEnd: {selector: app=inflate, count: 3}
  podsEvicted: {selector: app=keeper, count: 0}
  pricePerHourAtEnd: {max: 0.10}
  nodesAtEnd: {capacityType: on-demand, min: 1}
`
	sc, err := scenario.Parse("x.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	s := Summary{PDBViolations: 0, DuplicateLaunches: 1, ConsolidationActions: 2, PricePerHourEnd: 0.123456}
	got := Check(sc.Expect, s, Facts{PodsRunning: 3, NodesAtEnd: 0, PodsEvicted: 2})
	var names []string
	failed := map[string]bool{}
	for _, e := range got {
		names = append(names, e.Name)
		if !e.OK {
			failed[e.Name] = true
		}
	}
	if want := []string{"pdbViolations", "duplicateLaunches", "consolidationActions", "podsRunningAtEnd", "podsEvicted", "pricePerHourAtEnd", "nodesAtEnd"}; !slices.Equal(names, want) {
		t.Fatalf("checked %v, want %v", names, want)
	}
	for _, n := range []string{"duplicateLaunches", "podsEvicted", "pricePerHourAtEnd", "nodesAtEnd"} {
		if !failed[n] {
			t.Errorf("%s holds, want it failed (%+v)", n, got)
		}
	}
	if len(failed) != 4 || Passed(got) {
		t.Errorf("failed %v; Passed %v", failed, Passed(got))
	}
	if got[5].Got != 0.1235 || got[3].Want != "app=inflate = 3" || got[4].Want != "app=keeper = 0" || got[4].Got != int64(2) || got[6].Want != "on-demand >= 1" {
		t.Errorf("entries %+v", got)
	}
}

// fixture is a report from a fixed timeline (no local cloud).
func fixture() *Report {
	r := &Report{Scenario: "fixture", File: "test/scenarios/fixture.yaml", Started: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), Seconds: 95}
	for i := 0; i <= 40; i++ {
		ts := float64(i) * 2.5
		s := Sample{Time: ts}
		switch {
		case i < 4:
			s.PodsPending = 30
		case i < 20:
			s.PodsRunning, s.NodesSpot, s.PricePerHour = 30, 2, 0.0856
		default:
			s.PodsRunning, s.NodesSpot, s.NodesOnDemand, s.PricePerHour = 3, 0, 1, 0.0416
		}
		r.Samples = append(r.Samples, s)
	}
	r.Timeline = []Event{
		{0, KindStep, "scale", "default/inflate to 30"},
		{3.1, KindLaunch, "default-abc12", "c6g.xlarge us-east-1a spot $0.0428/h <script>alert(1)</script>"},
		{40, KindInterruption, "i-0123", "spot interruption warning"},
		{60, KindConsolidation, "consolidation-1", "single-node: replace 2 nodes $0.0856/h -> $0.0416/h"},
	}
	r.Nodes = []Node{{NodeClaim: "default-abc12", NodePool: "default", InstanceID: "i-0123", InstanceType: "c6g.xlarge", Zone: "us-east-1a", CapacityType: "spot", PricePerHour: 0.0428, Launched: 3.1, Gone: 45, Pods: 15}}
	r.Summary = Summary{PodsToRunningP50Seconds: 6.2, PodsToRunningP99Seconds: 9.8, PodsMeasured: 30, NodesLaunched: 3, NodesAtEnd: 1, PricePerHourPeak: 0.0856, PricePerHourEnd: 0.0416, FixedNodeGroupPricePerHourPeak: 0.384, FixedNodeGroupNodesPeak: 2}
	r.Expect = []Expectation{{"pdbViolations", "= 0", int64(0), true}}
	r.Passed = true
	return r
}

// report.json has the fields the issue lists, spelled as it spells them.
func TestWriteJSONFields(t *testing.T) {
	dir := t.TempDir()
	jp, hp, err := fixture().Write(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hp); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(jp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "passed", "expect", "summary", "timeline"} {
		if _, ok := m[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	sum := m["summary"].(map[string]any)
	for _, k := range []string{"podsToRunningP50Seconds", "podsToRunningP99Seconds", "nodesLaunched", "nodesAtEnd", "pricePerHourPeak",
		"pricePerHourEnd", "pdbViolations", "duplicateLaunches", "interruptionsHandled", "consolidationActions", "fixedNodeGroupPricePerHourPeak"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	ex := m["expect"].([]any)[0].(map[string]any)
	for _, k := range []string{"want", "got", "ok"} {
		if _, ok := ex[k]; !ok {
			t.Errorf("expect entry lacks %q", k)
		}
	}
	ev := m["timeline"].([]any)[0].(map[string]any)
	for _, k := range []string{"time", "kind", "object", "detail"} {
		if _, ok := ev[k]; !ok {
			t.Errorf("timeline entry lacks %q", k)
		}
	}
}

// report.html is self-contained and escapes what it shows.
func TestHTMLSelfContained(t *testing.T) {
	b, err := fixture().HTML()
	if err != nil {
		t.Fatal(err)
	}
	h := string(b)
	for _, bad := range []string{"http://", "https://", "<script>alert"} {
		if strings.Contains(strings.ReplaceAll(h, `"http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	for _, id := range Charts {
		if !strings.Contains(h, `id="`+id+`"`) {
			t.Errorf("no chart %s", id)
		}
	}
	if strings.Contains(h, `class="series"`) || strings.Contains(h, "data-drawn=\"") {
		t.Error("the charts must be drawn by the script, not present as markup")
	}
}
