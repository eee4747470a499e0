package fleet

import (
	"fmt"
	"io"
)

// nameAlphabet is the alphabet Kubernetes uses for generated name suffixes
// (no vowels, so no words; no 0, 1, 3: no look-alikes).
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

const (
	nameSuffixLen = 5
	maxNameLen    = 63
)

// NodeClaimName returns a new NodeClaim name for the NodePool:
// "<nodepool>-<5 characters from random>", at most 63 characters (so it
// is a valid label value, tag value and CreateFleet ClientToken). With
// crypto/rand the chance that two live NodeClaims of a pool share a name is
// negligible (27^5 = 14 million suffixes); tests pass a fixed reader.
func NodeClaimName(nodePool string, random io.Reader) (string, error) {
	b := make([]byte, nameSuffixLen)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("nodeclaim name: %w", err)
	}
	suffix := make([]byte, nameSuffixLen)
	for i, v := range b {
		suffix[i] = nameAlphabet[int(v)%len(nameAlphabet)]
	}
	prefix := nodePool
	if max := maxNameLen - nameSuffixLen - 1; len(prefix) > max {
		prefix = prefix[:max]
	}
	return prefix + "-" + string(suffix), nil
}
