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

// authenticate checks the token in path against the secret, refreshing the
// secret once (rate-limited by the cache) on a mismatch in case it rotated.
func authenticate(ctx context.Context, secret *SecretCache, path string) (authResult, error) {
	tok := tokenFromPath(path)
	if tok == "" {
		return authMissing, nil
	}
	want, err := secret.Get(ctx)
	if err != nil {
		return authError, err
	}
	if equalTokens(tok, want) {
		return authOK, nil
	}
	want, refreshed, err := secret.Refresh(ctx)
	if err != nil {
		// The token did not match the value we hold; failing to re-read the
		// secret does not make it any more valid.
		return authMismatch, err
	}
	if refreshed && equalTokens(tok, want) {
		return authOK, nil
	}
	return authMismatch, nil
}
