package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/test/localcloud"
)

// Suite is one local cloud shared by a test package, with the deployed
// configuration its functions load.
type Suite struct {
	LC      *localcloud.Cloud
	Deploy  *apis.Config
	LogsDir string
}

// Main runs a test package's tests on one local cloud for the cluster the
// example EC2NodeClass discovers, with the example files as the deployed
// configuration (plus the EC2NodeClass gpu-class the GPU pool names, as a
// copy of default). ready hands the suite to the package before its tests
// run. It is TestMain's body: it returns the exit code.
func Main(m *testing.M, opts localcloud.Options, ready func(*Suite), examples ...string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	deploy, err := Examples(examples...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, np := range deploy.NodePools {
		if np.Spec.Template.Spec.NodeClassRef != nil && np.Spec.Template.Spec.NodeClassRef.Name == "gpu-class" && len(deploy.NodeClasses) > 0 {
			gpu := *deploy.NodeClasses[0]
			gpu.Name = "gpu-class"
			deploy.NodeClasses = append(deploy.NodeClasses, &gpu)
			break
		}
	}
	if opts.Cluster == "" {
		opts.Cluster = "my-production-cluster"
	}
	lc, err := localcloud.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "local cloud:", err)
		return 1
	}
	defer lc.Close()
	ready(&Suite{LC: lc, Deploy: deploy, LogsDir: filepath.Join(lc.StateDir, "logs")})
	code := m.Run()
	if code != 0 {
		for name, tail := range lc.LogTails(30) {
			fmt.Fprintf(os.Stderr, "---- %s ----\n%s\n", name, tail)
		}
	}
	return code
}

// Ctx is a context for one test, cancelled when it ends.
func Ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return c
}

// Harness wires the functions for one test, logging to its own file (its
// tail printed when the test fails).
func (s *Suite) Harness(t testing.TB, opts Options) *Harness {
	t.Helper()
	f, err := LogFile(s.LogsDir, "functions-"+filepath.Base(t.Name())+".log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			if len(b) > 8000 && os.Getenv("NODEWRIGHT_FULL_LOG") == "" {
				b = b[len(b)-8000:]
			}
			t.Logf("functions' log (tail):\n%s", b)
		}
		f.Close()
	})
	if opts.NodePools == nil {
		opts.NodePools, opts.NodeClasses = s.Deploy.NodePools, s.Deploy.NodeClasses
	}
	opts.Log = f
	if opts.Provision == (provision.Options{}) {
		opts.Provision = provision.Options{RedriveAfter: 2 * time.Second}
	}
	h, err := New(Ctx(t), s.LC, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Pool applies a test pool based on the deployed configuration's first
// NodePool (see TestPool).
func (s *Suite) Pool(t testing.TB, name string, mutate func(*apis.NodePool)) *apis.NodePool {
	t.Helper()
	np, err := TestPool(Ctx(t), s.LC, s.Deploy.NodePools[0], name, mutate)
	if err != nil {
		t.Fatal(err)
	}
	return np
}
