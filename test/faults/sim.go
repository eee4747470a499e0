// Package faults is Nodewright's deterministic fault suite, after
// FoundationDB's simulation, TigerBeetle's VOPR and Jepsen's checkers: the
// functions' flows (provision rounds, sweeps, interruption messages) run
// against in-process fakes of DynamoDB, EC2, SSM and the API server; every
// call into a fake goes through one hook that may end the invocation
// there (before or after the call takes effect, as a Lambda that dies),
// return an error the real service returns at that call, or hand the turn
// to another invocation; a seeded scheduler interleaves two or three
// invocations call by call on a virtual clock; after each schedule the
// following invocations run until nothing changes, and the invariants of
// issue 18 are checked. A seed replays exactly.
package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// fault is an error the real service returns at a call: before it takes
// effect, or (after) once it has (an ambiguous failure).
type fault struct {
	name  string
	err   error
	after bool
}

type decisionKind int

const (
	goOn decisionKind = iota
	crashBefore
	crashAfter
	failBefore
	failAfter
	deadAlready
)

// decision is what the hook decides for one call.
type decision struct {
	kind  decisionKind
	fault fault
}

// errDead is what every call of an invocation that ended returns.
var errDead = fmt.Errorf("the invocation ended (a dead Lambda): %w", context.Canceled)

// invocation is one Lambda invocation of a flow.
type invocation struct {
	id      int
	name    string
	flow    string
	fn      func(ctx context.Context) error
	ctx     context.Context
	cancel  context.CancelFunc
	resume  chan decision
	dead    bool
	why     string
	start   time.Time
	timeout time.Duration
	// faulty: the hook may crash it and inject errors (the schedule's
	// invocations); the follow-up invocations run clean.
	faulty bool
	occ    map[string]int
	err    error
	// calls counts the calls decided.
	calls int
}

type invKey struct{}

// call is a call parked at the hook.
type call struct {
	iface, method, site string
	faults              []fault
	// wake, for a pause (Sim.sleep), is when it ends: the invocation is
	// not scheduled before then, and the clock moves to it when every live
	// invocation pauses.
	wake time.Time
}

type simEvent struct {
	inv      *invocation
	call     *call
	finished bool
}

// target is a crash the bounded set aims at: the occ-th call (from 1) of
// flow at site, before or after it takes effect.
type target struct {
	Flow, Site string
	Occ        int
	After      bool
	// Fault, when set, is the name of the error to return there instead
	// of a crash.
	Fault string
}

func (t target) String() string {
	when := "before"
	if t.After {
		when = "after"
	}
	if t.Fault != "" {
		when = t.Fault
	}
	return fmt.Sprintf("%s@%s#%d:%s", t.Flow, t.Site, t.Occ, when)
}

// parseTargets reads a comma-separated list of targets.
func parseTargets(list string) ([]target, error) {
	var out []target
	for _, s := range strings.Split(list, ",") {
		if s == "" {
			continue
		}
		t, err := parseTarget(s)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

func parseTarget(s string) (*target, error) {
	at := strings.Index(s, "@")
	hash := strings.LastIndex(s, "#")
	colon := strings.LastIndex(s, ":")
	if at < 0 || hash < at || colon < hash {
		return nil, fmt.Errorf("crash target %q: want flow@site#occurrence:before|after", s)
	}
	t := &target{Flow: s[:at], Site: s[at+1 : hash], After: s[colon+1:] == "after"}
	if w := s[colon+1:]; w != "after" && w != "before" {
		t.Fault = w
	}
	if _, err := fmt.Sscan(s[hash+1:colon], &t.Occ); err != nil {
		return nil, fmt.Errorf("crash target %q: %w", s, err)
	}
	return t, nil
}

// policy is how often the hook injects faults in a schedule.
type policy struct {
	crash, fail float64 // per call, for faulty invocations
	// switchRate is how often the scheduler picks again at a call (1 or
	// 0: every call); lower rates give the long runs that open narrow
	// race windows (as PCT does).
	switchRate float64
	// targets are crashes or faults aimed at, each hit once.
	targets []target
}

// Sim schedules invocations and decides every call.
type Sim struct {
	clock  *testingclock.FakeClock
	rng    *rand.Rand
	pol    policy
	events chan simEvent
	world  *World

	steps []string
	// Per flow and call site: reached, crashed before, crashed after.
	reached, crashedBefore, crashedAfter map[string]bool
	// ambiguous are the after-effect faults of each site reached.
	ambiguous                      map[string][]string
	crashes, faults, interleavings int
	// conditionFailures counts the conditional writes and transactions
	// DynamoDB refused (races the interleavings provoked).
	conditionFailures int
	targetHit         map[int]bool
	nextID            int
	// arrive, when set, is asked before every turn for the invocations
	// that start now (messages the queue hands out again while others
	// run) and when the next one will; finished sees every invocation
	// that ends.
	arrive   func() ([]*invocation, time.Time)
	finished func(*invocation)
}

func newSim(seed uint64, clock *testingclock.FakeClock, pol policy) *Sim {
	return &Sim{
		clock: clock, rng: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)), pol: pol, events: make(chan simEvent),
		reached: map[string]bool{}, crashedBefore: map[string]bool{}, crashedAfter: map[string]bool{}, ambiguous: map[string][]string{}, targetHit: map[int]bool{},
	}
}

// siteOf is the call site of a fake's method: the first frame outside
// this package and the AWS SDK (the product line that made the call).
// When that line is reached through the launch path or the terminator
// (shared/launch, shared/termination) from outside them, the line there
// that led to it is part of the site: the same store or fleet call made by
// two steps of a launch or of a termination is two crash points.
func siteOf() string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	short := func(f runtime.Frame) string {
		file := f.File
		if i := strings.Index(file, "/shared/"); i >= 0 {
			file = file[i+1:]
		}
		return fmt.Sprintf("%s:%d", file, f.Line)
	}
	site := ""
	for {
		f, more := frames.Next()
		switch {
		case site == "":
			if !strings.Contains(f.File, "/test/faults/") && !strings.Contains(f.File, "aws-sdk-go-v2") && !strings.Contains(f.Function, "runtime.") {
				site = short(f)
				if lifecycle(f.File) {
					return site
				}
			}
		case lifecycle(f.File):
			return site + " via " + short(f)
		}
		if !more {
			break
		}
	}
	if site == "" {
		return "?"
	}
	return site
}

// lifecycle reports whether file is in the launch path or the terminator.
func lifecycle(file string) bool {
	return strings.Contains(file, "/shared/launch/") || strings.Contains(file, "/shared/termination/")
}

// gate parks the calling invocation at a call until the scheduler
// decides it.
func (s *Sim) gate(ctx context.Context, iface, method string, faults []fault) decision {
	inv, _ := ctx.Value(invKey{}).(*invocation)
	if inv == nil {
		panic(fmt.Sprintf("faults: %s.%s called outside an invocation", iface, method))
	}
	if inv.dead {
		return decision{kind: deadAlready}
	}
	c := &call{iface: iface, method: method, site: iface + "." + method + "@" + siteOf(), faults: faults}
	s.events <- simEvent{inv: inv, call: c}
	return <-inv.resume
}

// cost is the virtual time a call takes.
func cost(iface, method string) time.Duration {
	switch {
	case method == "CreateFleet":
		return time.Second
	case iface == "EC2" || iface == "SSM":
		return 100 * time.Millisecond
	case iface == "DynamoDB":
		return 10 * time.Millisecond
	}
	return 50 * time.Millisecond
}

func (s *Sim) kill(inv *invocation, why string) {
	inv.dead, inv.why = true, why
	inv.cancel()
}

// traceAll: the schedule's steps list the calls of clean invocations too
// (the follow-up's; -followup).
var traceAll bool

// decide decides a parked call.
func (s *Sim) decide(inv *invocation, c *call) decision {
	key := inv.flow + "|" + c.site
	inv.calls++
	inv.occ[c.site]++
	occ := inv.occ[c.site]
	if inv.faulty && !s.reached[key] {
		s.reached[key] = true
		for _, f := range c.faults {
			if f.after || f.err == errICE {
				s.ambiguous[key] = append(s.ambiguous[key], f.name)
			}
		}
	}
	s.clock.Step(cost(c.iface, c.method))
	d := decision{}
	switch {
	case s.clock.Since(inv.start) > inv.timeout:
		d.kind = crashBefore
		s.kill(inv, "timeout")
	case !inv.faulty:
	case s.aimed(inv, c, occ) >= 0:
		t := s.pol.targets[s.aimed(inv, c, occ)]
		s.targetHit[s.aimed(inv, c, occ)] = true
		d.kind = crashBefore
		if t.After {
			d.kind = crashAfter
		}
		if t.Fault != "" {
			d.kind = goOn
			for _, f := range c.faults {
				if f.name == t.Fault {
					d.fault, d.kind = f, failBefore
					if f.after {
						d.kind = failAfter
					}
				}
			}
		}
	default:
		r := s.rng.Float64()
		switch {
		case r < s.pol.crash:
			d.kind = crashBefore
			if s.rng.IntN(2) == 1 {
				d.kind = crashAfter
			}
		case r < s.pol.crash+s.pol.fail && len(c.faults) > 0:
			d.fault = c.faults[s.rng.IntN(len(c.faults))]
			d.kind = failBefore
			if d.fault.after {
				d.kind = failAfter
			}
		}
	}
	label := ""
	switch d.kind {
	case crashBefore:
		if inv.why == "" {
			s.kill(inv, "crash")
		}
		s.crashes++
		if inv.faulty {
			s.crashedBefore[key] = true
		}
		label = "CRASH before (" + inv.why + ")"
	case crashAfter:
		s.kill(inv, "crash")
		s.crashes++
		if inv.faulty {
			s.crashedAfter[key] = true
		}
		label = "CRASH after"
	case failBefore, failAfter:
		s.faults++
		label = "ERROR " + d.fault.name
	}
	if inv.faulty || label != "" || traceAll {
		s.steps = append(s.steps, fmt.Sprintf("%8s %-24s %s #%d %s", s.world.elapsed(), inv.name, c.site, occ, label))
	}
	return d
}

// aimed is the index of the target this call is, or -1.
func (s *Sim) aimed(inv *invocation, c *call, occ int) int {
	for i, t := range s.pol.targets {
		if !s.targetHit[i] && t.Flow == inv.flow && t.Site == c.site && t.Occ == occ {
			return i
		}
	}
	return -1
}

// sleep pauses the calling invocation for d of virtual time (a flow's
// Wait): the others run meanwhile, and when all pause the clock moves to
// the first wake. A pause is no call: nothing fails there, but an
// invocation whose timeout passes while it pauses dies.
func (s *Sim) sleep(ctx context.Context, d time.Duration) error {
	inv, _ := ctx.Value(invKey{}).(*invocation)
	if inv == nil {
		panic("faults: a pause outside an invocation")
	}
	if inv.dead {
		return errDead
	}
	s.events <- simEvent{inv: inv, call: &call{iface: "Clock", method: "Sleep", wake: s.clock.Now().Add(d)}}
	if dec := <-inv.resume; dec.kind != goOn {
		return errDead
	}
	return ctx.Err()
}

// eligible are the live invocations that may take the next turn: those
// not pausing past now, with the invocations that arrive by then (Sim.
// arrive) started and added to live. If all pause, the clock moves to the
// first wake or arrival.
func (s *Sim) eligible(live *[]*invocation, parked map[*invocation]*call) []int {
	for {
		var next time.Time
		if s.arrive != nil {
			var arrived []*invocation
			arrived, next = s.arrive()
			s.start(arrived)
			*live = append(*live, arrived...)
		}
		var out []int
		first := next
		now := s.clock.Now()
		for i, inv := range *live {
			c := parked[inv]
			if c == nil || c.wake.IsZero() || !c.wake.After(now) {
				out = append(out, i)
			} else if first.IsZero() || c.wake.Before(first) {
				first = c.wake
			}
		}
		if len(out) > 0 {
			return out
		}
		s.clock.SetTime(first)
	}
}

// start starts invocations: each waits for its first turn.
func (s *Sim) start(invs []*invocation) {
	for _, inv := range invs {
		inv.start = s.clock.Now()
		go func() {
			<-inv.resume
			inv.err = inv.fn(inv.ctx)
			s.events <- simEvent{inv: inv, finished: true}
		}()
	}
}

// run runs invocations to their end, one call at a time, in the seeded
// order, and returns their errors.
func (s *Sim) run(invs ...*invocation) {
	live := append([]*invocation(nil), invs...)
	parked := map[*invocation]*call{}
	s.start(invs)
	var last *invocation
	for len(live) > 0 {
		ready := s.eligible(&live, parked)
		i := ready[0]
		if len(ready) > 1 {
			i = ready[s.rng.IntN(len(ready))]
			if r := s.pol.switchRate; r > 0 && r < 1 && last != nil && s.rng.Float64() >= r {
				for _, j := range ready {
					if live[j] == last {
						i = j
					}
				}
			}
		}
		inv := live[i]
		if last != nil && inv != last && len(live) > 1 {
			s.interleavings++
		}
		last = inv
		d := decision{}
		if c := parked[inv]; c != nil && !c.wake.IsZero() {
			if s.clock.Since(inv.start) > inv.timeout {
				s.kill(inv, "timeout")
				d.kind = deadAlready
			}
		} else if c != nil {
			d = s.decide(inv, c)
		}
		s.world.tick()
		inv.resume <- d
		ev := <-s.events
		if ev.inv != inv {
			panic(fmt.Sprintf("faults: %s called a fake while %s had the turn: a goroutine the suite does not order", ev.inv.name, inv.name))
		}
		if ev.finished {
			live = append(live[:i], live[i+1:]...)
			delete(parked, inv)
			if s.finished != nil {
				s.finished(inv)
			}
			continue
		}
		parked[inv] = ev.call
	}
}

// newInvocation makes an invocation of flow (faulty: faults may be
// injected).
func (s *Sim) newInvocation(flow string, faulty bool, timeout time.Duration, fn func(ctx context.Context) error) *invocation {
	s.nextID++
	inv := &invocation{id: s.nextID, flow: flow, name: fmt.Sprintf("%s-%d", flow, s.nextID), fn: fn, resume: make(chan decision),
		faulty: faulty, timeout: timeout, occ: map[string]int{}}
	inv.ctx, inv.cancel = context.WithCancel(context.WithValue(context.Background(), invKey{}, inv))
	return inv
}

// call runs one call of a fake through the hook: effect runs under the
// world's lock unless the invocation ends or fails first.
func (w *World) call(ctx context.Context, iface, method string, faults []fault, effect func() error) error {
	if w.direct && ctx.Value(invKey{}) == nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return effect()
	}
	d := w.sim.gate(ctx, iface, method, faults)
	switch d.kind {
	case deadAlready, crashBefore:
		return errDead
	case failBefore:
		return d.fault.err
	}
	w.mu.Lock()
	err := effect()
	w.mu.Unlock()
	switch d.kind {
	case crashAfter:
		return errDead
	case failAfter:
		return d.fault.err
	}
	return err
}

// interfaceMethods lists the methods of the fakes' interfaces: the crash
// points are these, at every product line that calls them.
func interfaceMethods(ifaces map[string]reflect.Type) []string {
	var out []string
	for name, t := range ifaces {
		for i := range t.NumMethod() {
			out = append(out, name+"."+t.Method(i).Name)
		}
	}
	sort.Strings(out)
	return out
}

// isDead reports whether err is a dead invocation's.
func isDead(err error) bool { return errors.Is(err, errDead) }
