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

// DefaultMinRefresh is how often at most an authentication failure makes the
// webhook fetch the secret again (to pick up a rotated token).
const DefaultMinRefresh = time.Minute

// FetchFunc returns the current secret value.
type FetchFunc func(ctx context.Context) (string, error)

// SecretCache holds the webhook token fetched at cold start and refetches it,
// at most once per MinRefresh, when a request fails authentication, so a
// rotated secret is picked up without a redeploy while a flood of bad tokens
// costs at most one Secrets Manager call a minute.
type SecretCache struct {
	fetch      FetchFunc
	now        func() time.Time
	minRefresh time.Duration

	mu        sync.Mutex
	value     string
	fetchedAt time.Time
}

// NewSecretCache returns a cache over fetch; minRefresh <= 0 means
// DefaultMinRefresh.
func NewSecretCache(fetch FetchFunc, now func() time.Time, minRefresh time.Duration) *SecretCache {
	if minRefresh <= 0 {
		minRefresh = DefaultMinRefresh
	}
	return &SecretCache{fetch: fetch, now: now, minRefresh: minRefresh}
}

// Get returns the cached token, fetching it on first use (and after a failed
// first fetch).
func (c *SecretCache) Get(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.value != "" {
		return c.value, nil
	}
	return c.load(ctx)
}

// Refresh fetches the token again unless the last fetch was less than
// MinRefresh ago. It reports whether it fetched.
func (c *SecretCache) Refresh(ctx context.Context) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fetchedAt.IsZero() && c.now().Sub(c.fetchedAt) < c.minRefresh {
		return c.value, false, nil
	}
	v, err := c.load(ctx)
	return v, true, err
}

func (c *SecretCache) load(ctx context.Context) (string, error) {
	c.fetchedAt = c.now()
	v, err := c.fetch(ctx)
	if err != nil {
		return "", fmt.Errorf("fetch webhook token: %w", err)
	}
	v = strings.TrimSpace(v)
	if len(v) < MinTokenLength {
		return "", errors.New("fetch webhook token: secret is shorter than the minimum token length")
	}
	c.value = v
	return v, nil
}
