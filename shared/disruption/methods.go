package disruption

import "github.com/nodewright/nodewright/shared/apis"

// methods are Nodewright's disruption methods, in the order a run tries
// them, as Karpenter's disruption controller registers its own: the first
// whose commands are not forceful ends the run. A method is one file (a
// type that implements method) and one line here.
var methods = register(
	repair{},
	expiration{},
	drift{},
	emptiness{},
	multiNode{},
	singleNode{},
)

// method is one way of disrupting nodes (Karpenter's disruption.Method):
// which nodes it takes, the commands it makes of them, and how Validate
// checks one of its commands again before it is carried out.
type method interface {
	// kind names the method and says how it disrupts.
	kind() kind
	// candidate says whether a node its class does not block is one of its
	// candidates; when not, why is what keeps the node from being one
	// (reported as Skipped), or "" when the method does not apply to it
	// (a node that has not drifted is simply no drift candidate).
	candidate(d *decider, n *nodeInfo) (ok bool, why string)
	// compute makes the method's commands of its candidates (none when it
	// finds no work), recording in d's report why it left a candidate.
	compute(d *decider, cands []*nodeInfo) []Command
	// still says, on fresh inputs, why a candidate of one of its commands
	// no longer is one (nil when it still is).
	still(v *view, n *nodeInfo, nominated map[string]bool) error
	// holds says whether the command's plan still holds for its
	// candidates on fresh inputs (their pods fit where it assumed, its
	// replacements still save enough).
	holds(s *sim, cmd Command, cands []*nodeInfo) error
}

// kind is what a method is: its name, its disruption class, and the
// disruption reason whose budgets bound it ("" for none).
type kind struct {
	name   Method
	class  class
	budget apis.DisruptionReason
}

// registry is a list of methods in the order a run tries them.
type registry struct{ methods []method }

// register lists methods in order.
func register(ms ...method) *registry {
	r := &registry{}
	for _, m := range ms {
		r.register(m)
	}
	return r
}

// register adds a method after those already registered.
func (r *registry) register(m method) { r.methods = append(r.methods, m) }

// lookup finds the method of a command (nil when none is registered).
func (r *registry) lookup(name Method) method {
	for _, m := range r.methods {
		if m.kind().name == name {
			return m
		}
	}
	return nil
}
