// Package scenarios_test plays every scenario shipped in this directory on
// the local cloud (each on its own, as its cloud options ask) and checks
// its expectations, as `make run SCENARIO=...` would; it also checks that
// every file parses and that the configuration and manifests it names load.
package scenarios_test

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/player"
	"github.com/nodewright/nodewright/test/report"
	"github.com/nodewright/nodewright/test/scenario"
)

// peak caps a scenario's peak replica count in this test (0: as written).
var peak = flag.Int("peak", 0, "shorten every scenario to this peak replica count (0: as shipped)")

// shipped are the scenario files beside this test, sorted.
func shipped(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	want := []string{"capacity-block-ends.yaml", "consolidation-scale-down.yaml", "default.yaml", "do-not-disrupt.yaml", "getting-started.yaml", "gpu-pool.yaml",
		"missing-offering.yaml", "node-images.yaml", "node-overlay.yaml", "nodepool-limit.yaml", "region-eu-west-1.yaml", "reservation-overflow.yaml", "spot-capacity-fallback.yaml", "spot-interruption-pdb.yaml", "static-pool.yaml"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("scenarios %v, want %v", files, want)
	}
	return files
}

// TestShippedScenariosLoad: every file parses, its configuration loads
// with the functions' loader and its manifests are Kubernetes objects.
func TestShippedScenariosLoad(t *testing.T) {
	for _, f := range shipped(t) {
		sc, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := player.LoadConfig(sc); err != nil {
			t.Error(err)
		}
		for _, m := range sc.Manifests {
			if objs, err := player.Objects(m); err != nil || len(objs) == 0 {
				t.Errorf("%s: manifest %s: %d objects, %v", f, m, len(objs), err)
			}
		}
		for _, st := range sc.Steps {
			if st.Apply != "" {
				if _, err := player.Objects(st.Apply); err != nil {
					t.Errorf("%s:%d: %v", f, st.Line, err)
				}
			}
		}
		if reflect.ValueOf(sc.Expect).IsZero() {
			t.Errorf("%s expects nothing", f)
		}
	}
}

// TestPlayShippedScenarios plays each scenario on a local cloud of its own
// (two at a time) and checks every expectation it states.
func TestPlayShippedScenarios(t *testing.T) {
	for _, f := range shipped(t) {
		t.Run(strings.TrimSuffix(f, ".yaml"), func(t *testing.T) {
			t.Parallel()
			play(t, f)
		})
	}
}

// TestPDBViolationIsCounted checks the checker on the local cloud: an
// instance under a PDB terminated outside Nodewright takes its pods at
// once, and the report counts the violation from the budget's status
// (testdata/pdb-violated.yaml expects at least one).
func TestPDBViolationIsCounted(t *testing.T) {
	t.Parallel()
	play(t, "testdata/pdb-violated.yaml")
}

func play(t *testing.T, file string) {
	sc, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if *peak > 0 && sc.Peak() > *peak {
		sc.WithPeak(*peak)
	}
	cfg, err := player.LoadConfig(sc)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lc := localcloud.StartForTest(t, player.CloudOptions(sc, cfg))
	up := time.Since(start)
	out := t.TempDir()
	logs, err := os.Create(filepath.Join(out, "functions.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	ctx := t.Context()
	rep, err := player.Play(ctx, lc, sc, cfg, player.Options{Log: logs})
	if _, _, werr := rep.Write(out); werr != nil {
		t.Error(werr)
	}
	if err != nil || !rep.Passed {
		for _, ev := range rep.Timeline {
			t.Logf("%7.1fs %-13s %s: %s", ev.Time, ev.Kind, ev.Object, ev.Detail)
		}
		b, _ := os.ReadFile(filepath.Join(out, "functions.log"))
		if len(b) > 6000 {
			b = b[len(b)-6000:]
		}
		t.Logf("functions' log (tail):\n%s", b)
	}
	if err != nil {
		t.Fatalf("played to %.1f s: %v", rep.Seconds, err)
	}
	for _, e := range rep.Expect {
		if !e.OK {
			t.Errorf("expect %s: want %s, got %v", e.Name, e.Want, e.Got)
		}
	}
	if len(rep.Expect) == 0 || !rep.Passed {
		t.Errorf("report: passed %v with %d expectations", rep.Passed, len(rep.Expect))
	}
	checkReport(t, rep)
	s := rep.Summary
	t.Logf("%s: local cloud up %.1f s, played %.1f s: p50 %.1f s, p99 %.1f s, %d nodes launched, %d at the end, $%.4f/h peak, $%.4f/h end, fixed m5.xlarge group $%.4f/h, %d interruptions, %d consolidations",
		sc.Name, up.Seconds(), rep.Seconds, s.PodsToRunningP50Seconds, s.PodsToRunningP99Seconds, s.NodesLaunched, s.NodesAtEnd,
		s.PricePerHourPeak, s.PricePerHourEnd, s.FixedNodeGroupPricePerHourPeak, s.InterruptionsHandled, s.ConsolidationActions)
}

// checkReport: the report's figures agree with its own timeline and nodes.
func checkReport(t *testing.T, rep *report.Report) {
	t.Helper()
	launches, webhook := 0, 0
	for _, ev := range rep.Timeline {
		switch {
		case ev.Kind == report.KindLaunch:
			launches++
		case ev.Kind == report.KindTrigger && ev.Object == "webhook":
			webhook++
		}
	}
	// Every scenario has pods kube-scheduler finds no node for: the API
	// server calls the registered webhook, which invokes provision.
	if webhook == 0 {
		t.Error("the pending-pod webhook never invoked the provision function")
	}
	if launches != rep.Summary.NodesLaunched || len(rep.Nodes) != launches {
		t.Errorf("%d launches in the timeline, %d nodes, summary says %d", launches, len(rep.Nodes), rep.Summary.NodesLaunched)
	}
	if len(rep.Samples) < 2 {
		t.Errorf("%d samples", len(rep.Samples))
	}
	if rep.Summary.NodesLaunched > 0 && rep.Summary.PricePerHourPeak <= 0 {
		t.Errorf("nodes launched but the peak price is %v", rep.Summary.PricePerHourPeak)
	}
}
