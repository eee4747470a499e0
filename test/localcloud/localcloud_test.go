package localcloud

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/test/localcloud/proc"
)

func TestStartWithoutToolsSaysRunMakeTools(t *testing.T) {
	_, err := Start(context.Background(), Options{ToolsDir: t.TempDir(), StateDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make tools") || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("err = %v, want it to name the missing tools and `make tools`", err)
	}
}

func TestToolsDir(t *testing.T) {
	t.Setenv(ToolsEnv, "/opt/tools")
	if got := ToolsDir(); got != "/opt/tools" {
		t.Errorf("ToolsDir with %s = %q", ToolsEnv, got)
	}
	t.Setenv(ToolsEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/c")
	if got := ToolsDir(); got != filepath.Join("/c", "nodewright", "tools") {
		t.Errorf("ToolsDir = %q", got)
	}
}

func TestNamesAndParameters(t *testing.T) {
	n := NamesFor("prod")
	want := Names{
		Table: "nodewright-prod-state", InterruptionQueue: "nodewright-prod-interruption",
		InterruptionDLQ: "nodewright-prod-interruption-dlq", RecheckQueue: "nodewright-prod-interruption-recheck", NodeRole: "KarpenterNodeRole-prod",
		InstanceProfile: "nodewright-prod-node", DiscoveryTag: "karpenter.sh/discovery",
	}
	if n != want {
		t.Errorf("NamesFor(prod) = %+v, want %+v", n, want)
	}
	if got := AMIParameter(minorOf(KubernetesVersion), "arm64", "standard"); got != "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/standard/recommended/image_id" {
		t.Errorf("AMIParameter = %q", got)
	}
}

func TestEnvNamesTheResources(t *testing.T) {
	c := &Cloud{Cluster: Cluster{Name: "prod"}, Names: NamesFor("prod"), Seeded: &AWSResources{QueueURL: "http://127.0.0.1:1/123456789012/nodewright-prod-interruption",
		RecheckQueueURL: "http://127.0.0.1:1/123456789012/nodewright-prod-interruption-recheck", RecheckQueueARN: "arn:aws:sqs:us-east-1:123456789012:nodewright-prod-interruption-recheck"}}
	env := c.Env()
	want := map[string]string{
		names.EnvClusterName:         "prod",
		names.EnvTableName:           "nodewright-prod-state",
		names.EnvQueueURL:            "http://127.0.0.1:1/123456789012/nodewright-prod-interruption",
		names.EnvRecheckQueueURL:     "http://127.0.0.1:1/123456789012/nodewright-prod-interruption-recheck",
		names.EnvRecheckQueueARN:     "arn:aws:sqs:us-east-1:123456789012:nodewright-prod-interruption-recheck",
		names.EnvNodeRoleName:        "KarpenterNodeRole-prod",
		names.EnvInstanceProfileName: "nodewright-prod-node",
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("Env() = %v, want %v", env, want)
	}
}

// TestWaitReadyRefusesAProbeAnsweredByAnotherProcess: a server that fails
// to bind its port (another local cloud took it) exits at once, while the
// probe of that port is answered by the other cloud's server: it is not
// ready, and the bind failure is what portTaken recognises.
func TestWaitReadyRefusesAProbeAnsweredByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	p, err := proc.Start(proc.Spec{Name: "kube-scheduler", Path: "/bin/sh",
		Args: []string{"-c", `echo 'failed to listen on 127.0.0.1:36597: bind: address already in use' >&2; sleep 0.02; exit 1`}}, dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	answered := func(context.Context) error { return nil } // the other cloud's server
	err = waitReady(context.Background(), p, answered, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("waitReady: %v, want the exit", err)
	}
	if !portTaken(p) {
		t.Errorf("portTaken: false for a server whose log says its port was taken")
	}
}
