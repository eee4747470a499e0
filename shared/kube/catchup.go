package kube

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// errGone is a watch the server refused because the revision left its
// window.
var errGone = errors.New("resourceVersion too old")

// catchUp watches from the store's revision until an event reaches want,
// or early is closed (hinted). It returns a reason to list instead ("gone",
// "timeout") or "" when caught up.
func (s *store[T]) catchUp(ctx context.Context, want uint64, opts CacheOptions, early <-chan struct{}) (int, bool, string, error) {
	if have, ok := parseRV(s.rv); ok && have >= want {
		return 0, false, "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, opts.CatchUpTimeout)
	defer cancel()
	events := 0
	for {
		done, n, err := s.watchOnce(ctx, want, opts.WatchSeconds, early)
		events += n
		switch {
		case errors.Is(err, errGone):
			return events, false, "gone", nil
		case errors.Is(err, errEarly):
			return events, true, "", nil
		case ctx.Err() != nil:
			return events, false, "timeout", nil
		case err != nil:
			return events, false, "", fmt.Errorf("watch %s: %w", s.name, err)
		case done:
			return events, false, "", nil
		}
	}
}

// errEarly is a catch-up ended by its Sync's hints (see Cache.Expect).
var errEarly = errors.New("ended on the hinted pods")

// watchOnce opens one watch from the store's revision and applies its events
// until one reaches want (done), early is closed (errEarly) or the watch
// ends.
func (s *store[T]) watchOnce(ctx context.Context, want uint64, seconds int, early <-chan struct{}) (bool, int, error) {
	w, err := s.rc.Get().Resource(s.name).Param("watch", "true").Param("resourceVersion", s.rv).
		Param("allowWatchBookmarks", "true").Param("timeoutSeconds", strconv.Itoa(seconds)).Watch(ctx)
	if err != nil {
		if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
			return false, 0, errGone
		}
		return false, 0, err
	}
	defer w.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return false, n, ctx.Err()
		case <-early:
			return false, n, errEarly
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, n, nil
			}
			n++
			if ev.Type == watch.Error {
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					return false, n, errGone
				}
				return false, n, err
			}
			obj, ok := ev.Object.(interface{ GetResourceVersion() string })
			if !ok {
				return false, n, fmt.Errorf("unexpected watch object %T", ev.Object)
			}
			rv := obj.GetResourceVersion()
			s.apply(ev)
			s.rv = rv
			if got, ok := parseRV(rv); ok && got >= want {
				return true, n, nil
			}
		}
	}
}

func (s *store[T]) apply(ev watch.Event) {
	o, ok := any(ev.Object).(*T)
	if !ok {
		return
	}
	m := metaOf(o)
	k := key(m)
	switch ev.Type {
	case watch.Added, watch.Modified:
		s.trim(o)
		s.objs[k] = o
	case watch.Deleted:
		delete(s.objs, k)
	default:
		return
	}
	if s.view != nil {
		if s.changed == nil {
			s.changed = map[string]struct{}{}
		}
		s.changed[k] = struct{}{}
	}
	if s.hints != nil {
		if rv, ok := parseRV(m.GetResourceVersion()); ok {
			s.hints.seen(k, rv)
		}
	}
}
