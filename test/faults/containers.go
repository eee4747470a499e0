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

// storeOf is the Store of the container that runs ctx's invocation.
func (f *flows) storeOf(ctx context.Context) (*state.Store, error) {
	inv := ctx.Value(invKey{}).(*invocation)
	if s := f.containers.of[inv]; s != nil {
		return s, nil
	}
	fn := function(inv.flow)
	var s *state.Store
	if idle := f.containers.idle[fn]; len(idle) > 0 {
		s, f.containers.idle[fn] = idle[len(idle)-1], idle[:len(idle)-1]
	} else {
		var err error
		if s, err = state.New(f.w.dynamo, table, clusterName, f.w.clock.Now); err != nil {
			return nil, err
		}
	}
	f.containers.of[inv] = s
	return s, nil
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
