package setup

import (
	"context"
	"testing"

	"github.com/nodewright/nodewright/shared/interruption"
	"github.com/nodewright/nodewright/shared/provision"
)

type viewSource struct{}

func (viewSource) View(context.Context) (*provision.View, error) { return &provision.View{}, nil }

// TestInterruptionDepsShareReads: the interruption handler's cluster reads
// (locating each message's node) and its replacements' (the reconciler's
// solve) go through one SharedReads, so a batch's parallel messages share
// reads of the cluster rather than queue for one each.
func TestInterruptionDepsShareReads(t *testing.T) {
	r := &provision.Reconciler{Source: viewSource{}}
	d := InterruptionDeps(r)
	shared, ok := d.Source.(*interruption.SharedReads)
	if !ok {
		t.Fatalf("the handler's source is a %T, want *interruption.SharedReads", d.Source)
	}
	if r.Source != provision.ClusterSource(shared) {
		t.Fatalf("the reconciler's source is a %T, not the handler's shared one", r.Source)
	}
	// Wired again (a fault-suite invocation reuses nothing, a harness may):
	// not wrapped twice.
	if d2 := InterruptionDeps(r); d2.Source != d.Source {
		t.Fatal("InterruptionDeps wrapped the shared source again")
	}
}
