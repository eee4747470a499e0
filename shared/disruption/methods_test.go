package disruption

import (
	"slices"
	"strings"
	"testing"
)

// recorded is a registered method that notes, in log, each time it runs.
type recorded struct {
	method
	log *[]Method
}

func (r recorded) compute(d *decider, cands []*nodeInfo) []Command {
	*r.log = append(*r.log, r.kind().name)
	return r.method.compute(d, cands)
}

// dummy is a method registered through the same registry as
// Nodewright's: it deletes, gracefully, the nodes labelled dummy=yes.
type dummy struct{ log *[]Method }

func (dummy) kind() kind { return kind{name: "dummy", class: graceful} }

func (dummy) candidate(_ *decider, n *nodeInfo) (bool, string) {
	return n.node.Labels["dummy"] == "yes", ""
}

func (m dummy) compute(d *decider, cands []*nodeInfo) []Command {
	*m.log = append(*m.log, "dummy")
	if len(cands) == 0 {
		return nil
	}
	return []Command{d.command("dummy", "Dummy", cands, nil, "labelled dummy=yes")}
}

func (dummy) still(*view, *nodeInfo, map[string]bool) error { return nil }
func (dummy) holds(*sim, Command, []*nodeInfo) error        { return nil }

func TestMethodsAreRegisteredInOrder(t *testing.T) {
	var got []Method
	for _, m := range methods.methods {
		got = append(got, m.kind().name)
	}
	want := []Method{MethodRepair, MethodExpiration, MethodDrift, MethodEmptiness, MethodMultiNode, MethodSingleNode}
	if !slices.Equal(got, want) {
		t.Errorf("methods %v, want %v", got, want)
	}
}

// TestARegisteredMethodRunsInOrder: a method registered after emptiness
// runs after it and before multi-node (repair, expiration and drift before it); when it finds work the run ends
// with its command, and Validate finds the method through the registry.
func TestARegisteredMethodRunsInOrder(t *testing.T) {
	all := []Method{MethodRepair, MethodExpiration, MethodDrift, MethodEmptiness, "dummy", MethodMultiNode, MethodSingleNode}
	for _, tc := range []struct {
		name     string
		labelled bool
		ran      []Method
		method   Method
	}{
		{"the dummy finds work", true, all[:5], "dummy"},
		{"the dummy finds none", false, all, MethodSingleNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.node("a", "c8", od)
			w.pods("a", 1, "500m")
			if tc.labelled {
				w.nodes[0].Labels["dummy"] = "yes"
			}
			var log []Method
			r := register()
			for _, m := range methods.methods[:4] {
				r.register(recorded{m, &log})
			}
			r.register(dummy{&log})
			for _, m := range methods.methods[4:] {
				r.register(recorded{m, &log})
			}
			cmds, rep := decide(w.inputs(), r)
			if !slices.Equal(log, tc.ran) {
				t.Errorf("methods ran %v, want %v", log, tc.ran)
			}
			if rep.Method != tc.method || len(cmds) != 1 || cmds[0].Method != tc.method {
				t.Fatalf("report method %q, commands %q; want one %s command", rep.Method, summaries(cmds), tc.method)
			}
			if err := validate(cmds[0], w.inputs(), r); err != nil {
				t.Errorf("validate through the registry: %v", err)
			}
			if tc.labelled {
				if err := Validate(cmds[0], w.inputs()); err == nil || !strings.Contains(err.Error(), `unknown method "dummy"`) {
					t.Errorf("Validate without the dummy registered: %v, want unknown method", err)
				}
			}
		})
	}
}
