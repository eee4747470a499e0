package fleet

import (
	"context"
	"sync"
	"time"
)

// memo caches the results of slow lookups by key for a time, and makes
// concurrent callers of one key share a single lookup. Failures are not
// cached.
type memo[T any] struct {
	mu      sync.Mutex
	entries map[string]*memoEntry[T]
}

type memoEntry[T any] struct {
	done    chan struct{}
	val     T
	err     error
	expires time.Time
}

// get returns the cached value of key while it is younger than ttl at now,
// else computes it with fn.
func (m *memo[T]) get(ctx context.Context, key string, now time.Time, ttl time.Duration, fn func() (T, error)) (T, error) {
	var zero T
	m.mu.Lock()
	if m.entries == nil {
		m.entries = map[string]*memoEntry[T]{}
	}
	if e, ok := m.entries[key]; ok {
		select {
		case <-e.done:
			if now.Before(e.expires) {
				m.mu.Unlock()
				return e.val, nil
			}
		default:
			m.mu.Unlock()
			select {
			case <-e.done:
			case <-ctx.Done():
				return zero, ctx.Err()
			}
			return e.val, e.err
		}
	}
	e := &memoEntry[T]{done: make(chan struct{})}
	m.entries[key] = e
	m.mu.Unlock()

	e.val, e.err = fn()
	e.expires = now.Add(ttl)
	close(e.done)
	if e.err != nil {
		m.forget(key, e)
	}
	return e.val, e.err
}

// forget drops key's entry if it is still e.
func (m *memo[T]) forget(key string, e *memoEntry[T]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries[key] == e {
		delete(m.entries, key)
	}
}

// clear drops every entry.
func (m *memo[T]) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = nil
}

// peek returns key's value if it is cached and younger than ttl at now,
// without computing it.
func (m *memo[T]) peek(key string, now time.Time) (T, bool) {
	var zero T
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return zero, false
	}
	select {
	case <-e.done:
		if e.err == nil && now.Before(e.expires) {
			return e.val, true
		}
	default:
	}
	return zero, false
}

// forgetKey drops key's entry, whatever it holds.
func (m *memo[T]) forgetKey(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
}
