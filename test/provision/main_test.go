// Package provision_test proves the provision function end to end on the
// local cloud: the Lambda handler, driven with each kind of trigger, turns
// pending pods into Ready nodes with its state in DynamoDB. One local cloud
// serves the package; tests that need the cluster to themselves run first,
// one at a time, and the rest run in parallel, each with its own NodePool
// (a taint and a node selector keep their pods apart).
package provision_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
)

var (
	suite  *harness.Suite
	lc     *localcloud.Cloud
	deploy *apis.Config // the deployed configuration
)

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, localcloud.Options{BootDelay: time.Second, InstallCRDs: true},
		func(s *harness.Suite) { suite, lc, deploy = s, s.LC, s.Deploy },
		"nodepool-default.yaml", "ec2nodeclass-default.yaml", "nodepool-gpu-training.yaml"))
}

func newHarness(t *testing.T, opts harness.Options) *harness.Harness {
	t.Helper()
	return suite.Harness(t, opts)
}

func ctx(t *testing.T) context.Context { return harness.Ctx(t) }
