package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// MinTokenLength is the shortest token the webhook accepts from Secrets
// Manager; a shorter one is treated as a misconfiguration and every request
// is refused.
const MinTokenLength = 32

// Secret cache timing defaults.
const (
	// DefaultMinRefresh is how often at most an authentication failure
	// makes the webhook fetch the secret again (to pick up a token the
	// cluster got before this instance saw it).
	DefaultMinRefresh = time.Minute
	// DefaultMaxAge is how long a fetched secret is used before it is
	// fetched again: a token rotated out of the secret stops working on a
	// warm instance within this.
	DefaultMaxAge = 5 * time.Minute
	// DefaultMaxBackoff caps the wait after failed fetches (1 s, 2 s, 4 s,
	// ... after consecutive failures), during which requests are refused
	// without calling Secrets Manager.
	DefaultMaxBackoff = time.Minute
)

// ErrSecretUnavailable is returned (wrapped) while the secret cannot be read.
var ErrSecretUnavailable = errors.New("webhook token unavailable")

// Tokens are the tokens the webhook accepts: the secret's current value and,
// during the overlap after a rotation, its previous one.
type Tokens struct {
	Current  string
	Previous string // "" when the secret has no previous version
}

// FetchFunc returns the secret's current and previous values.
type FetchFunc func(ctx context.Context) (Tokens, error)

// SecretCache holds the webhook's tokens. It fetches them on first use,
// again once they are older than MaxAge, and, at most once per MinRefresh,
// when a request's token matches neither (the cluster may have a token this
// instance has not seen yet). A failed fetch is remembered: requests are
// refused without calling Secrets Manager until a backoff (doubling from a
// second up to MaxBackoff) has passed, so a flood of requests while the
// secret is unreadable costs a handful of calls, not one each.
type SecretCache struct {
	fetch      FetchFunc
	now        func() time.Time
	minRefresh time.Duration
	maxAge     time.Duration
	maxBackoff time.Duration

	mu        sync.Mutex
	tokens    Tokens
	ok        bool      // tokens hold a successful fetch
	fetchedAt time.Time // of the last attempt
	err       error     // of the last attempt, when it failed
	failures  int       // consecutive failed attempts
	retryAt   time.Time // no attempt before this after a failure
}

// CacheOptions tune a SecretCache; zero values take the defaults.
type CacheOptions struct {
	MinRefresh, MaxAge, MaxBackoff time.Duration
}

// NewSecretCache returns a cache over fetch.
func NewSecretCache(fetch FetchFunc, now func() time.Time, o CacheOptions) *SecretCache {
	if o.MinRefresh <= 0 {
		o.MinRefresh = DefaultMinRefresh
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	return &SecretCache{fetch: fetch, now: now, minRefresh: o.MinRefresh, maxAge: o.MaxAge, maxBackoff: o.MaxBackoff}
}

// Get returns the tokens, fetching them when none are held or they are
// older than MaxAge (unless a failed fetch's backoff has not passed: then
// the failure).
func (c *SecretCache) Get(ctx context.Context) (Tokens, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.ok && now.Sub(c.fetchedAt) < c.maxAge {
		return c.tokens, nil
	}
	return c.load(ctx, now)
}

// Refresh fetches the tokens again, unless the last attempt was less than
// MinRefresh ago (or a failure's backoff has not passed). It reports whether
// it fetched.
func (c *SecretCache) Refresh(ctx context.Context) (Tokens, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Sub(c.fetchedAt) < c.minRefresh || c.err != nil && now.Before(c.retryAt) {
		if !c.ok {
			return Tokens{}, false, c.err
		}
		return c.tokens, false, nil
	}
	t, err := c.load(ctx, now)
	return t, true, err
}

// load fetches, unless a failure's backoff is still running.
func (c *SecretCache) load(ctx context.Context, now time.Time) (Tokens, error) {
	if c.err != nil && now.Before(c.retryAt) {
		return Tokens{}, c.err
	}
	c.fetchedAt = now
	t, err := c.fetch(ctx)
	if err == nil {
		t.Current, t.Previous = strings.TrimSpace(t.Current), strings.TrimSpace(t.Previous)
		if len(t.Current) < MinTokenLength {
			err = errors.New("the secret is shorter than the minimum token length")
		}
		if len(t.Previous) < MinTokenLength {
			t.Previous = "" // a short previous value is never accepted
		}
	}
	if err != nil {
		c.tokens, c.ok = Tokens{}, false
		c.failures++
		c.retryAt = now.Add(c.backoff())
		c.err = fmt.Errorf("%w: fetch: %w (next attempt after %s)", ErrSecretUnavailable, err, c.retryAt.Sub(now))
		return Tokens{}, c.err
	}
	c.tokens, c.ok, c.err, c.failures = t, true, nil, 0
	return t, nil
}

// backoff is the wait after the current run of failures.
func (c *SecretCache) backoff() time.Duration {
	d := time.Second
	for i := 1; i < c.failures && d < c.maxBackoff; i++ {
		d *= 2
	}
	return min(d, c.maxBackoff)
}
