package faults

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// Every method of every interface the fakes stand behind goes through the
// hook: the crash points are derived from the interfaces' method sets (and
// the product lines that call them), so a method added to an interface and
// implemented without the hook fails here.
func TestEveryMethodGoesThroughTheHook(t *testing.T) {
	cfgOnce.Do(func() { cfg = newConfig() })
	clock := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	sim := newSim(1, clock, policy{})
	w := newWorld(sim, cfg)
	impls := map[string]any{}
	for name, it := range fakeInterfaces() {
		switch {
		case strings.HasPrefix(name, "DynamoDB"):
			impls[name] = w.dynamo
		case strings.HasPrefix(name, "EC2"):
			impls[name] = w.ec2
		case strings.HasPrefix(name, "SSM"):
			impls[name] = w.ssm
		case name == "Pricing":
			impls[name] = w.pricing
		case name == "SQS":
			impls[name] = w.sqs
		default:
			impls[name] = w.kube
		}
		if !reflect.TypeOf(impls[name]).Implements(it) {
			t.Fatalf("%T does not implement %s", impls[name], name)
		}
	}
	methods := interfaceMethods(fakeInterfaces())
	if len(methods) < 20 {
		t.Fatalf("only %d interface methods: %v", len(methods), methods)
	}
	inv := sim.newInvocation("reflect", true, time.Hour, func(ctx context.Context) error {
		for _, m := range methods {
			iface, method, _ := strings.Cut(m, ".")
			fn := reflect.ValueOf(impls[iface]).MethodByName(method)
			ft := fn.Type()
			n := ft.NumIn()
			if ft.IsVariadic() {
				n--
			}
			args := make([]reflect.Value, n)
			for i := range n {
				pt := ft.In(i)
				switch {
				case pt == reflect.TypeOf((*context.Context)(nil)).Elem():
					args[i] = reflect.ValueOf(ctx)
				case pt.Kind() == reflect.Pointer:
					args[i] = reflect.New(pt.Elem())
				default:
					args[i] = reflect.Zero(pt)
				}
			}
			fn.Call(args)
		}
		return nil
	})
	sim.run(inv)
	seen := map[string]bool{}
	for k := range sim.reached {
		site := strings.TrimPrefix(k, "reflect|")
		seen[site[:strings.Index(site, "@")]] = true
	}
	for _, m := range methods {
		iface, method, _ := strings.Cut(m, ".")
		if !seen[fakeName(iface)+"."+method] {
			t.Errorf("%s does not go through the hook", m)
		}
	}
}

// fakeName is the name a fake gives its calls for an interface.
func fakeName(iface string) string {
	switch {
	case strings.HasPrefix(iface, "DynamoDB"):
		return "DynamoDB"
	case strings.HasPrefix(iface, "EC2"):
		return "EC2"
	case strings.HasPrefix(iface, "SSM"):
		return "SSM"
	case iface == "SQS":
		return "SQS"
	case iface == "Pricing":
		return "Pricing"
	}
	return "Kube"
}

// A seed replays exactly: the same steps (the schedule's and the
// follow-up's), the same violations, however the Go runtime schedules the
// goroutines.
func TestSeedReplaysExactly(t *testing.T) {
	// The follow-up's calls too: the whole run replays.
	was := traceAll
	traceAll = true
	t.Cleanup(func() { traceAll = was })
	for _, seed := range []uint64{2, 7, 41} {
		a, b := runOne(seed, nil), runOne(seed, nil)
		if a.err != nil || b.err != nil {
			t.Fatalf("seed %d: %v, %v", seed, a.err, b.err)
		}
		if !reflect.DeepEqual(a.steps, b.steps) || !reflect.DeepEqual(a.violations, b.violations) {
			for i := range min(len(a.steps), len(b.steps)) {
				if a.steps[i] != b.steps[i] {
					t.Fatalf("seed %d diverges at step %d:\n  %s\n  %s", seed, i, a.steps[i], b.steps[i])
				}
			}
			t.Fatalf("seed %d: %d and %d steps, violations %v and %v", seed, len(a.steps), len(b.steps), a.violations, b.violations)
		}
		if len(a.steps) < 20 {
			t.Fatalf("seed %d: only %d steps", seed, len(a.steps))
		}
	}
}
