package interruption

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nodewright/nodewright/shared/provision"
)

// gatedSource is a cluster read that counts its calls, and holds each until
// the test lets it finish (release); a view names the call it came from.
type gatedSource struct {
	calls   atomic.Int32
	started chan int32
	release chan error
}

func newGatedSource() *gatedSource {
	return &gatedSource{started: make(chan int32, 100), release: make(chan error)}
}

func (g *gatedSource) View(ctx context.Context) (*provision.View, error) {
	n := g.calls.Add(1)
	g.started <- n
	select {
	case err := <-g.release:
		if err != nil {
			return nil, err
		}
		return &provision.View{Warnings: []string{string(rune('0' + n))}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// call names the call a view came from.
func call(v *provision.View) string { return v.Warnings[0] }

// TestSharedReadsCoalesceConcurrentReads: reads that arrive while one is in
// flight share the next one (which starts after they arrived, so each sees
// every change before its call); the ten reads of a batch's messages cost
// two reads of the cluster, not ten.
func TestSharedReadsCoalesceConcurrentReads(t *testing.T) {
	g := newGatedSource()
	s := ShareReads(g)
	ctx := context.Background()
	first := make(chan *provision.View, 1)
	go func() {
		v, err := s.View(ctx)
		if err != nil {
			t.Error(err)
		}
		first <- v
	}()
	<-g.started // the first read is in flight
	const n = 9
	var wg sync.WaitGroup
	views := make([]*provision.View, n)
	var arrived sync.WaitGroup
	arrived.Add(n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arrived.Done()
			v, err := s.View(ctx)
			if err != nil {
				t.Error(err)
			}
			views[i] = v
		}()
	}
	arrived.Wait()
	waitJoined(t, s, n)
	g.release <- nil // the first read ends; the next starts
	if v := <-first; v == nil || call(v) != "1" {
		t.Fatalf("first read: %+v, want the first call's view", v)
	}
	<-g.started
	g.release <- nil
	wg.Wait()
	for i, v := range views {
		if v == nil || call(v) != "2" {
			t.Fatalf("read %d: %+v, want the second call's view (one started after it arrived)", i, v)
		}
	}
	if c := g.calls.Load(); c != 2 {
		t.Fatalf("%d reads of the cluster for %d concurrent reads, want 2", c, n+1)
	}
	// A read after all that starts a read of its own.
	go func() { <-g.started; g.release <- nil }()
	if v, err := s.View(ctx); err != nil || call(v) != "3" {
		t.Fatalf("a later read: %+v %v, want a read of its own", v, err)
	}
}

// waitJoined waits until n reads wait for the next shared read.
func waitJoined(t *testing.T, s *SharedReads, n int) {
	t.Helper()
	for {
		s.mu.Lock()
		joined := 0
		if s.next != nil {
			joined = s.next.waiters
		}
		s.mu.Unlock()
		if joined == n {
			return
		}
		if joined > n {
			t.Fatalf("%d reads joined, want %d", joined, n)
		}
		runtime.Gosched()
	}
}

// TestSharedReadsLeaderCancelled: a shared read whose leading caller's
// context has ended fails for that caller; the others, whose contexts are
// alive, read again rather than take its cancellation as theirs.
func TestSharedReadsLeaderCancelled(t *testing.T) {
	g := newGatedSource()
	s := ShareReads(g)
	go func() {
		if _, err := s.View(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	<-g.started // read 1 in flight
	lctx, cancel := context.WithCancel(context.Background())
	lead := make(chan error, 1)
	go func() {
		_, err := s.View(lctx) // leads read 2
		lead <- err
	}()
	waitJoined(t, s, 1)
	follow := make(chan *provision.View, 1)
	go func() {
		v, err := s.View(context.Background()) // shares read 2
		if err != nil {
			t.Error(err)
		}
		follow <- v
	}()
	waitJoined(t, s, 2)
	cancel()
	g.release <- nil // read 1 ends; read 2 starts with a context that has ended
	<-g.started
	if err := <-lead; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled leader: %v, want context.Canceled", err)
	}
	<-g.started // read 3: the follower's own
	g.release <- nil
	if v := <-follow; v == nil || call(v) != "3" {
		t.Fatalf("follower of a cancelled read: %+v, want a read of its own", v)
	}
}

// TestSharedReadsError: a failed read fails every caller that shared it.
func TestSharedReadsError(t *testing.T) {
	g := newGatedSource()
	s := ShareReads(g)
	boom := errors.New("boom")
	go func() { <-g.started; g.release <- boom }()
	if _, err := s.View(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if ShareReads(s) != s {
		t.Fatal("ShareReads of a SharedReads wraps it again")
	}
}
