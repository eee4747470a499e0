package webhook

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// authResult is the outcome of checking a request's token.
type authResult int

const (
	authOK       authResult = iota
	authMissing             // no token: 401
	authMismatch            // wrong token: 403
	authError               // the secret could not be read: 503
)

// tokenFromPath returns the token a request path carries ("/<token>"), or ""
// when the path is not of that form.
func tokenFromPath(path string) string {
	tok, ok := strings.CutPrefix(path, "/")
	if !ok || tok == "" || strings.ContainsAny(tok, "/?#") {
		return ""
	}
	return tok
}

// equalTokens compares a and b in time that depends on neither their content
// nor their lengths: both are hashed first, then the digests are compared
// with crypto/subtle.
func equalTokens(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// matches reports which of the accepted tokens tok equals: both are always
// compared, so the time taken says nothing about which (if any) matched.
func matches(tok string, t Tokens) (current, previous bool) {
	current = equalTokens(tok, t.Current)
	previous = t.Previous != "" && equalTokens(tok, t.Previous)
	return current, previous
}

// authenticate checks the token in path against the secret's current and
// previous values, refreshing them once (rate-limited by the cache) on a
// mismatch in case the cluster has a token this instance has not seen. stale
// is true when the request carried the previous value: the cluster's
// registration predates the last rotation.
func authenticate(ctx context.Context, secret *SecretCache, path string) (res authResult, stale bool, err error) {
	tok := tokenFromPath(path)
	if tok == "" {
		return authMissing, false, nil
	}
	want, err := secret.Get(ctx)
	if err != nil {
		return authError, false, err
	}
	if cur, prev := matches(tok, want); cur || prev {
		return authOK, !cur, nil
	}
	want, refreshed, err := secret.Refresh(ctx)
	if err != nil {
		// The token did not match the values we hold; failing to re-read
		// the secret does not make it any more valid.
		return authMismatch, false, err
	}
	if refreshed {
		if cur, prev := matches(tok, want); cur || prev {
			return authOK, !cur, nil
		}
	}
	return authMismatch, false, nil
}
