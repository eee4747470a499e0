package faults

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

var (
	seedFlag      = flag.Uint64("seed", 0, "replay one schedule (its scenario is seed mod the number of scenarios)")
	crashFlag     = flag.String("crash", "", "with -seed: the targeted crashes and faults, flow@site#occurrence:before|after|<fault>, comma-separated")
	schedulesFlag = flag.Int("schedules", 0, "run this many random schedules (make chaos) instead of the bounded set")
	fromFlag      = flag.Uint64("from", 1, "with -schedules: the first seed (a long run split over processes)")
	verboseFlag   = flag.Bool("schedule", false, "with -seed: print the whole schedule")
	followUpFlag  = flag.Bool("followup", false, "with -seed: print the follow-up's calls too (its invocations run without faults)")
	strictFlag    = flag.Bool("strict", false, "fail on the known defects too (knownDefects ignored): the run before the fixes")
)

// policyFor is a seed's fault rates per call: a third of the schedules
// only interleave, a third also get the services' errors, a third also
// crash.
func policyFor(seed uint64) policy {
	n := uint64(len(scenarios))
	p := policy{switchRate: []float64{1, 0.2, 0.05}[(seed/(3*n))%3]}
	switch (seed / n) % 3 {
	case 1:
		p.fail = 0.03
	case 2:
		p.crash, p.fail = 0.02, 0.03
	}
	return p
}

// result is one schedule's outcome.
type result struct {
	seed       uint64
	scenario   string
	targets    []target
	violations []violation
	steps      []string
	sim        *Sim
	err        error
}

func (r result) command() string {
	c := fmt.Sprintf("go test ./test/faults -run TestFaults -seed=%d", r.seed)
	if len(r.targets) > 0 {
		var ts []string
		for _, t := range r.targets {
			ts = append(ts, t.String())
		}
		c += fmt.Sprintf(" -crash='%s'", strings.Join(ts, ","))
	}
	return c + " -schedule -v"
}

// runOne runs the schedule of seed (and target): bootstrap, the
// scenario's invocations interleaved with faults, the follow-up until
// nothing changes, the invariants.
func runOne(seed uint64, tgts []target) result {
	if *followUpFlag {
		traceAll = true
	}
	cfgOnce.Do(func() { cfg = newConfig() })
	pol := policyFor(seed)
	pol.targets = tgts
	clock := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	sim := newSim(seed, clock, pol)
	w := newWorld(sim, cfg)
	sc := scenarios[seed%uint64(len(scenarios))]
	res := result{seed: seed, scenario: sc.name, targets: tgts, sim: sim}
	f, err := newFlows(w, cfg, seed)
	if err == nil {
		err = f.bootstrap()
	}
	if err != nil {
		res.err = err
		return res
	}
	w.began = clock.Now()
	w.violations, sim.steps = nil, nil
	invs := sc.setup(f)
	sim.run(invs...)
	f.followUp(sim.rng)
	w.settled(15*time.Minute, 30*time.Second)
	res.violations, res.steps = sortedViolations(w.violations), sim.steps
	return res
}

// suite aggregates schedules.
type suite struct {
	results                              []result
	reached, crashedBefore, crashedAfter map[string]bool
	firstSeed                            map[string]uint64
	firstTargets                         map[string][]target
	ambiguous                            map[string][]string
	crashes, faults, interleavings       int
	conditionFailures                    int
}

func newSuite() *suite {
	return &suite{reached: map[string]bool{}, crashedBefore: map[string]bool{}, crashedAfter: map[string]bool{}, firstSeed: map[string]uint64{}, firstTargets: map[string][]target{}, ambiguous: map[string][]string{}}
}

func (s *suite) add(r result) {
	s.results = append(s.results, r)
	for k := range r.sim.reached {
		if !s.reached[k] {
			s.reached[k] = true
			s.firstSeed[k] = r.seed
			s.firstTargets[k] = r.targets
			s.ambiguous[k] = r.sim.ambiguous[k]
		}
	}
	for k := range r.sim.crashedBefore {
		s.crashedBefore[k] = true
	}
	for k := range r.sim.crashedAfter {
		s.crashedAfter[k] = true
	}
	s.crashes += r.sim.crashes
	s.faults += r.sim.faults
	s.interleavings += r.sim.interleavings
	s.conditionFailures += r.sim.conditionFailures
}

// fillFaults returns, once, at every call site reached, each error the
// service may return after the call took effect (an ambiguous failure)
// and ICE: the outcomes a flow must tell from a plain failure.
func (s *suite) fillFaults() {
	for _, k := range slices.Sorted(maps.Keys(s.reached)) {
		flow, site, _ := strings.Cut(k, "|")
		for _, name := range s.ambiguous[k] {
			s.add(runOne(s.firstSeed[k], s.aim(k, target{Flow: flow, Site: site, Occ: 1, Fault: name})))
		}
	}
}

// aim is the targets that reach k's site again (those of the schedule
// that first reached it) and t.
func (s *suite) aim(k string, t target) []target {
	return append(append([]target(nil), s.firstTargets[k]...), t)
}

// fill runs a targeted crash for every call site reached but not yet
// crashed before or after: the seed that reached it replays its prefix
// exactly, and ends the invocation there.
func (s *suite) fill() {
	for range 3 {
		var todo []target
		for _, k := range slices.Sorted(maps.Keys(s.reached)) {
			flow, site, _ := strings.Cut(k, "|")
			if !s.crashedBefore[k] {
				todo = append(todo, target{Flow: flow, Site: site, Occ: 1})
			}
			if !s.crashedAfter[k] {
				todo = append(todo, target{Flow: flow, Site: site, Occ: 1, After: true})
			}
		}
		if len(todo) == 0 {
			return
		}
		for _, t := range todo {
			k := t.Flow + "|" + t.Site
			s.add(runOne(s.firstSeed[k], s.aim(k, t)))
		}
	}
}

func (s *suite) crashPoints() int {
	n := 0
	for k := range s.reached {
		if s.crashedBefore[k] {
			n++
		}
		if s.crashedAfter[k] {
			n++
		}
	}
	return n
}

// report checks the results: unknown violations fail with their replay
// command; each known defect must still be found.
func (s *suite) report(t *testing.T, requireKnown bool) {
	found := map[string][]string{}
	failed := 0
	for _, r := range s.results {
		if r.err != nil {
			t.Errorf("seed %d (%s): %v\nreplay: %s", r.seed, r.scenario, r.err, r.command())
			continue
		}
		var unknown []violation
		for _, v := range r.violations {
			if d, ok := knownDefects[v.Check]; ok && !*strictFlag {
				found[d] = append(found[d], fmt.Sprintf("seed %d %s: %s\n      replay: %s", r.seed, r.scenario, v, r.command()))
				continue
			}
			unknown = append(unknown, v)
		}
		if len(unknown) > 0 {
			failed++
			if failed <= 5 || *strictFlag {
				t.Errorf("seed %d (%s) broke invariants:\n  %s\nschedule:\n%s\nreplay: %s", r.seed, r.scenario, joinV(unknown), schedule(r.steps, 80), r.command())
			}
		}
	}
	defects := map[string]bool{}
	for _, d := range knownDefects {
		defects[d] = true
	}
	for _, d := range slices.Sorted(maps.Keys(defects)) {
		if len(found[d]) == 0 {
			if requireKnown && !*strictFlag {
				t.Errorf("defect %s is no longer found: delete its checks from knownDefects (flows.go)", d)
			}
			continue
		}
		t.Logf("expected failure, defect %s (%d schedules), first: %s", d, len(found[d]), found[d][0])
	}
	t.Logf("%d schedules, %s crash points (%d distinct call sites crashed before and after), %s interleavings, %d errors injected, %d conditional writes refused",
		len(s.results), commas(s.crashes), s.crashPoints(), commas(s.interleavings), s.faults, s.conditionFailures)
}

func joinV(vs []violation) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.String())
	}
	return strings.Join(out, "\n  ")
}

// schedule prints a schedule's steps, the last n of them when longer.
func schedule(steps []string, n int) string {
	if n > 0 && len(steps) > n {
		return fmt.Sprintf("  ... %d steps before\n  %s", len(steps)-n, strings.Join(steps[len(steps)-n:], "\n  "))
	}
	return "  " + strings.Join(steps, "\n  ")
}

func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// boundedSeeds is the bounded set's random schedules (each scenario
// several times); fill then crashes every call site reached.
const boundedSeeds = 60

// corpus are seeds past boundedSeeds that found a defect (a narrow race:
// defect 5's window is a few calls wide; 2201, a spot drain whose
// invocation died holding the node while the sweep came too late), kept in
// the bounded set so that it always runs them, as fuzzers keep their
// corpus.
var corpus = []uint64{136, 271, 2201}

// TestFaults runs the bounded set (go test ./test/faults), one schedule
// (-seed), or -schedules random ones (make chaos).
func TestFaults(t *testing.T) {
	if *seedFlag != 0 {
		tgts, err := parseTargets(*crashFlag)
		if err != nil {
			t.Fatal(err)
		}
		r := runOne(*seedFlag, tgts)
		if r.err != nil {
			t.Fatal(r.err)
		}
		n := 80
		if *verboseFlag {
			n = 0
		}
		t.Logf("seed %d, scenario %s:\n%s", r.seed, r.scenario, schedule(r.steps, n))
		for _, v := range r.violations {
			if d, ok := knownDefects[v.Check]; ok && !*strictFlag {
				t.Logf("expected (defect %s): %s", d, v)
			} else {
				t.Errorf("%s", v)
			}
		}
		return
	}
	s := newSuite()
	start := time.Now()
	n, from := boundedSeeds, uint64(1)
	if *schedulesFlag > 0 {
		n, from = *schedulesFlag, max(*fromFlag, 1)
	}
	for seed := from; seed < from+uint64(n); seed++ {
		s.add(runOne(seed, nil))
	}
	if *schedulesFlag == 0 {
		for _, seed := range corpus {
			s.add(runOne(seed, nil))
		}
		s.fill()
		s.fillFaults()
		s.fill()
		// Not vacuous: every call site a flow reached was crashed, before
		// and after it took effect.
		var missing []string
		for _, k := range slices.Sorted(maps.Keys(s.reached)) {
			if !s.crashedBefore[k] || !s.crashedAfter[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			t.Errorf("call sites never crashed before and after: %v", missing)
		}
		// ... the launch path's and the terminator's among them (their
		// steps are crash points of their own: siteOf).
		for _, pkg := range []string{"shared/launch/", "shared/termination/"} {
			n := 0
			for k := range s.reached {
				if strings.Contains(k, pkg) {
					n++
				}
			}
			if n < 3 {
				t.Errorf("only %d call sites reached through %s: its calls are not crash points", n, pkg)
			}
			t.Logf("%d call sites reached through %s, each crashed before and after", n, pkg)
		}
		// ... and the pods summary's write (consolidation's fingerprints).
		if !slices.ContainsFunc(slices.Collect(maps.Keys(s.reached)), func(k string) bool { return strings.Contains(k, "shared/state/podsums.go") }) {
			t.Error("the pods summary's write is never reached: consolidation's fingerprints are not crash points")
		}
		if len(s.reached) < 20 {
			t.Errorf("only %d call sites reached: the flows are not wired to the fakes", len(s.reached))
		}
	}
	s.report(t, *schedulesFlag == 0)
	held := "every invariant held"
	var known, other []string
	for _, r := range s.results {
		for _, v := range r.violations {
			if _, ok := knownDefects[v.Check]; ok && !*strictFlag {
				known = append(known, v.Check)
			} else {
				other = append(other, v.Check)
			}
		}
	}
	if len(known)+len(other) > 0 {
		all := append(append([]string(nil), known...), other...)
		sort.Strings(all)
		held = fmt.Sprintf("%d invariant violations (checks %s), %d of them known defects (flows.go)", len(all), strings.Join(uniq(all), " "), len(known))
	}
	fmt.Printf("%s schedules, %s crash points, %s interleavings: %s (%s)\n", commas(len(s.results)), commas(s.crashes), commas(s.interleavings), held, time.Since(start).Round(time.Second))
}

func uniq(ss []string) []string {
	var out []string
	for i, s := range ss {
		if i == 0 || ss[i-1] != s {
			out = append(out, s)
		}
	}
	return out
}
