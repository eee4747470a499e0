// Package kubeaccess proves Nodewright's Kubernetes access layer against the
// real local cloud: EKS-style IAM authentication through the API server's
// token webhook and the stack's RBAC, the warm cache's reads, the writes
// (taints, finalizers, evictions, events), the drain, and the CRDs.
package kubeaccess

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nodewright/nodewright/test/localcloud"
)

// cloud is the local cloud every test of the package shares (one bring-up).
var cloud *localcloud.Cloud

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	dir, err := os.MkdirTemp("", "kubeaccess-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c, err := localcloud.Start(ctx, localcloud.Options{StateDir: dir, InstallCRDs: true})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "local cloud:", err)
		os.Exit(1)
	}
	cloud = c
	code := m.Run()
	if code != 0 {
		for name, tail := range c.LogTails(30) {
			fmt.Fprintf(os.Stderr, "---- %s log (tail) ----\n%s\n", name, tail)
		}
	}
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "local cloud close:", err)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}
