package interruption

import (
	"context"
	"errors"
	"sync"

	"github.com/nodewright/nodewright/shared/provision"
)

// SharedReads is a cluster source whose concurrent reads share one read of
// the cluster. The messages of a batch are handled in parallel, and each
// reads the cluster twice (to find its node, and again in its
// replacement's solve); the cache behind the source serializes its syncs,
// each of which waits about a second for a quiet resource's bookmark, so a
// batch of ten spent ten to twenty seconds reading before its last
// replacement, most of a spot warning's two minutes at scale (test/scale).
//
// A read never returns a view taken before it was called: reads that
// arrive while one is in flight wait for it to end and share the next,
// which starts after them (every change made before any of them is in
// it). So a burst of reads costs at most two reads of the cluster. The
// read runs on the goroutine of the first caller to want it, with its
// context; a caller whose context is alive reads again if that context
// ended the shared read.
type SharedReads struct {
	src ClusterSource

	mu      sync.Mutex
	current *read // in flight
	next    *read // waiting for current to end
}

// read is one read of the cluster and the callers that share it.
type read struct {
	done    chan struct{}
	view    *provision.View
	err     error
	waiters int // callers sharing it, its leader included
}

// ShareReads returns src whose concurrent reads share (src itself if it
// already is a SharedReads).
func ShareReads(src ClusterSource) *SharedReads {
	if s, ok := src.(*SharedReads); ok {
		return s
	}
	return &SharedReads{src: src}
}

// View returns the cluster as of a read that started after the call.
func (s *SharedReads) View(ctx context.Context) (*provision.View, error) {
	for {
		v, err := s.view(ctx)
		if err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue // another caller's context ended the read it led
		}
		return v, err
	}
}

func (s *SharedReads) view(ctx context.Context) (*provision.View, error) {
	s.mu.Lock()
	if r := s.next; r != nil {
		// A read waits to start after the one in flight: share it.
		r.waiters++
		s.mu.Unlock()
		select {
		case <-r.done:
			return r.view, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r := &read{done: make(chan struct{}), waiters: 1}
	if cur := s.current; cur != nil {
		// The read in flight started before this call: lead the next,
		// once it ends (whatever this context does meanwhile: the callers
		// that join are waiting for it).
		s.next = r
		s.mu.Unlock()
		<-cur.done
		s.mu.Lock()
		s.next = nil
	}
	s.current = r
	s.mu.Unlock()
	r.view, r.err = s.src.View(ctx)
	s.mu.Lock()
	s.current = nil
	s.mu.Unlock()
	close(r.done)
	return r.view, r.err
}
