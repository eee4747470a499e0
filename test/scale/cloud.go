package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
)

// cluster is the cluster's name: the example EC2NodeClass discovers its
// subnets and security groups by it.
const cluster = "my-production-cluster"

// motoSeed seeds moto's ID generator before the instances are launched,
// so that a restore launching them in the same order gets the same IDs.
const motoSeed = 2205

// cloudOptions are the local cloud's options at scale: etcd's quota
// raised; the controllers that would act on objects written straight into
// etcd left off (the Deployment, ReplicaSet and DaemonSet controllers, the
// garbage collector, node lifecycle with its taint evictions, and the TTL
// controller that annotates every node as the cluster grows); subnets of
// 4,091 addresses; kwok's
// heartbeat every 10 minutes (5,000 nodes every 20-45 s would be 150
// writes a second); no node bridge (the builder registers the nodes).
func cloudOptions(stateDir, etcdData string) localcloud.Options {
	return localcloud.Options{
		Cluster: cluster, StateDir: stateDir, EtcdData: etcdData, InstallCRDs: true,
		EtcdQuota: 8 << 30, SubnetPrefix: 20, // 1,667 nodes a zone at 100%
		DisableControllers: []string{"deployment", "replicaset", "daemonset", "garbagecollector", "ttl", "podgc"},
		NodeHeartbeat:      10 * time.Minute, NoNodeBridge: true, BootDelay: time.Second, ReadyTimeout: 3 * time.Minute,
	}
}

// deployed is the deployed configuration: the example NodePool without its
// limits (1,000 CPUs would stop the cluster at a fifth of its size) and
// the example EC2NodeClass.
func deployed() (*apis.Config, error) {
	cfg, err := harness.Examples("nodepool-default.yaml", "ec2nodeclass-default.yaml")
	if err != nil {
		return nil, err
	}
	for _, np := range cfg.NodePools {
		np.Spec.Limits = nil
	}
	return cfg, nil
}

// newHarness wires the functions (a new container of each) to the cloud.
func newHarness(ctx context.Context, lc *localcloud.Cloud, cfg *apis.Config, log io.Writer, wrapKube, wrapAWS func(http.RoundTripper) http.RoundTripper) (*harness.Harness, error) {
	return harness.New(ctx, lc, harness.Options{
		NodePools: cfg.NodePools, NodeClasses: cfg.NodeClasses, Log: log,
		ValidationWait: 2 * time.Second, ConsolidationMaxWait: 30 * time.Second,
		WrapKube: wrapKube, WrapAWS: wrapAWS,
	})
}

// seedMoto seeds moto's random generators (its IDs and addresses).
func seedMoto(ctx context.Context, lc *localcloud.Cloud) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/moto-api/seed?a=%d", lc.MotoURL, motoSeed), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("seed moto: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("seed moto: %s", resp.Status)
	}
	return nil
}
