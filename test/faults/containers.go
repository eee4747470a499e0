package faults

import (
	"context"
	"strings"

	"github.com/nodewright/nodewright/shared/state"
)

// containers.go: Lambda containers. Each keeps its state.Store, and with
// it the NodeClaim records its last read found (the Store's cache),
// between the invocations it serves, one at a time; a container whose
// invocation died (a crash, a timeout) is gone with its cache. An
// invocation takes the function's idle container that served last, or a
// new one (cold): so a warm read's cache is as stale as the other
// containers' writes made it, and the change log must bring it up to date.

// containers are the idle containers by function, and the one each
// running invocation holds.
type containers struct {
	idle map[string][]*state.Store
	of   map[*invocation]*state.Store
}

// function is the Lambda function a flow runs in.
func function(flow string) string {
	switch {
	case strings.HasPrefix(flow, "interruption"):
		return "interruption"
	case strings.HasPrefix(flow, "consolidation"):
		return "consolidation"
	}
	return "provision"
}

// storeOf is the Store of the container that runs ctx's invocation (nil
// if none could be made: the reconciler refuses a nil Store).
func (f *flows) storeOf(ctx context.Context) *state.Store {
	inv := ctx.Value(invKey{}).(*invocation)
	if s := f.containers.of[inv]; s != nil {
		return s
	}
	fn := function(inv.flow)
	var s *state.Store
	if idle := f.containers.idle[fn]; len(idle) > 0 {
		s, f.containers.idle[fn] = idle[len(idle)-1], idle[:len(idle)-1]
	} else if s, _ = state.New(f.w.dynamo, table, clusterName, f.w.clock.Now); s == nil {
		return nil
	}
	f.containers.of[inv] = s
	return s
}

// release ends inv's hold on its container: idle again, unless the
// invocation died.
func (f *flows) release(inv *invocation) {
	s := f.containers.of[inv]
	delete(f.containers.of, inv)
	if s != nil && !inv.dead {
		fn := function(inv.flow)
		f.containers.idle[fn] = append(f.containers.idle[fn], s)
	}
}

// finished is Sim.finished: a failed or dead interruption's message goes
// back to the queue, and the container is released.
func (f *flows) finished(inv *invocation) {
	f.requeue(inv)
	f.release(inv)
}
