package localcloud

import (
	"context"
	"sort"
	"testing"
	"time"
)

// StartForTest starts a local cloud for t with its state under t.TempDir()
// and stops it in t.Cleanup. Missing tools fail the test (never skip): run
// `make tools`. When the test fails, the tail of every server log is
// printed.
func StartForTest(t testing.TB, opts Options) *Cloud {
	t.Helper()
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("local cloud: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			tails := c.LogTails(40)
			names := make([]string, 0, len(tails))
			for n := range tails {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				t.Logf("---- %s log (tail) ----\n%s", n, tails[n])
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("local cloud close: %v", err)
		}
	})
	return c
}
