// Package provision_test proves the provision function end to end on the
// local cloud: the Lambda handler, driven with each kind of trigger, turns
// pending pods into Ready nodes with its state in DynamoDB. One local cloud
// serves the package; tests that need the cluster to themselves run first,
// one at a time, and the rest run in parallel, each with its own NodePool
// (a taint and a node selector keep their pods apart).
package provision_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
)

// cluster is the name the example EC2NodeClass discovers.
const cluster = "my-production-cluster"

var (
	lc      *localcloud.Cloud
	deploy  *apis.Config // the deployed configuration
	logsDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	deploy, err = harness.Examples("nodepool-default.yaml", "ec2nodeclass-default.yaml", "nodepool-gpu-training.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// nodepool-gpu-training.yaml names an EC2NodeClass gpu-class that the
	// examples do not define: the deployment brings it, like default's.
	gpu := *deploy.NodeClasses[0]
	gpu.Name = "gpu-class"
	deploy.NodeClasses = append(deploy.NodeClasses, &gpu)
	lc, err = localcloud.Start(ctx, localcloud.Options{Cluster: cluster, BootDelay: time.Second, InstallCRDs: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "local cloud:", err)
		return 1
	}
	defer lc.Close()
	logsDir = filepath.Join(lc.StateDir, "logs")
	code := m.Run()
	if code != 0 {
		for name, tail := range lc.LogTails(30) {
			fmt.Fprintf(os.Stderr, "---- %s ----\n%s\n", name, tail)
		}
	}
	return code
}

// newHarness wires the functions for one test, logging to its own file.
func newHarness(t *testing.T, opts harness.Options) *harness.Harness {
	t.Helper()
	f, err := harness.LogFile(logsDir, "functions-"+filepath.Base(t.Name())+".log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("functions' log (tail):\n%s", b)
		}
		f.Close()
	})
	if opts.NodePools == nil {
		opts.NodePools, opts.NodeClasses = deploy.NodePools, deploy.NodeClasses
	}
	opts.Log = f
	if opts.Provision == (provision.Options{}) {
		opts.Provision = provision.Options{RedriveAfter: 2 * time.Second}
	}
	h, err := harness.New(ctx(t), lc, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return c
}
