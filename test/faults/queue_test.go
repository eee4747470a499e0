package faults

import (
	"testing"

	"github.com/nodewright/nodewright/infra/queueattrs"
)

// The suite's queue is the stack's: the same receive limit and
// visibility timeout (infra/queueattrs' golden attributes).
func TestQueueModelIsTheStacks(t *testing.T) {
	g, err := queueattrs.Golden()
	if err != nil {
		t.Fatal(err)
	}
	vis, err := queueattrs.Seconds(g.Queue, "VisibilityTimeout")
	if err != nil {
		t.Fatal(err)
	}
	if g.MaxReceiveCount != maxReceives || vis != queueVisibility {
		t.Errorf("stack: %d receives, visibility %v; the suite models %d and %v", g.MaxReceiveCount, vis, maxReceives, queueVisibility)
	}
}
