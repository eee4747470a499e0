// Package run is one provisioning pass end to end on the local cloud, as
// its end-to-end test checks it (and the progress display `make run`
// prints with; `make run` itself plays scenarios: package player): the
// users' example NodePool
// and EC2NodeClass (shared/examples, unchanged), the inflate Deployment
// pending with no node to run on, one provisioning pass (read the cluster,
// solve, launch every planned NodeClaim with EC2 CreateFleet through the
// AWS front), and the launched instances registering as nodes that run
// every pod.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/setup"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/localcloud/awscalls"
)

// Example files the scenario loads, unchanged.
const (
	NodePoolFile  = "nodepool-default.yaml"
	NodeClassFile = "ec2nodeclass-default.yaml"
	WorkloadFile  = "inflate.yaml"
)

// DiscoveryTag is the tag key the example EC2NodeClass selects subnets and
// security groups by; its value names the cluster.
const DiscoveryTag = "karpenter.sh/discovery"

// Options tune the scenario.
type Options struct {
	// Replicas of the inflate Deployment (default 20).
	Replicas int
	// Timeout bounds each wait: pods pending, nodes up and pods running
	// (default 2 minutes).
	Timeout time.Duration
	// Progress receives the progress lines (nil: none).
	Progress *Progress
	// Log receives the provisioning pass's JSON logs (nil: none).
	Log *slog.Logger
	// Calls, when set, records every AWS operation the provisioning pass
	// makes (tests check them against the function's static scan).
	Calls *awscalls.Recorder
}

func (o *Options) defaults() {
	if o.Replicas <= 0 {
		o.Replicas = 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = NewProgress(io.Discard, time.Now)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Config is the users' example configuration and the cluster it is for.
type Config struct {
	*apis.Config
	// Cluster is the value of the example EC2NodeClass's discovery tag:
	// the local cloud must carry this name for its subnets to match.
	Cluster string
	Files   []string
}

// LoadConfig loads the example NodePool and EC2NodeClass with the
// functions' loader and finds the cluster their selectors discover.
func LoadConfig() (*Config, error) {
	var files []string
	for _, f := range []string{NodePoolFile, NodeClassFile} {
		p, err := refdata.Example(f)
		if err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	cfg, err := apis.LoadFiles(files...)
	if err != nil {
		return nil, fmt.Errorf("load examples: %w", err)
	}
	if len(cfg.NodePools) == 0 || len(cfg.NodeClasses) == 0 {
		return nil, fmt.Errorf("examples %v: want a NodePool and an EC2NodeClass", files)
	}
	cluster := ""
	for _, t := range cfg.NodeClasses[0].Spec.SubnetSelectorTerms {
		if v := t.Tags[DiscoveryTag]; v != "" && v != "*" {
			cluster = v
		}
	}
	if cluster == "" {
		return nil, fmt.Errorf("EC2NodeClass %s selects no subnets by %s: cannot tell the cluster", cfg.NodeClasses[0].Name, DiscoveryTag)
	}
	return &Config{Config: cfg, Cluster: cluster, Files: files}, nil
}

// Result is what the scenario did.
type Result struct {
	Report *provision.Report
	// Launcher is the launcher the pass used (tests launch more with it).
	Launcher *fleet.Launcher
	Pods     []corev1.Pod  // the inflate pods, Running
	Nodes    []corev1.Node // the nodes they run on
	Phases   []Phase
}

// Phase is a named step and how long it took.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Scenario runs the job on a running local cloud: inflate pending, one
// provisioning pass, every pod running on the launched nodes.
func Scenario(ctx context.Context, lc *localcloud.Cloud, cfg *Config, opts Options) (*Result, error) {
	opts.defaults()
	p := opts.Progress
	res := &Result{}
	phase := func(name string, start time.Time) { res.Phases = append(res.Phases, Phase{name, p.now().Sub(start)}) }

	start := p.now()
	if err := createInflate(ctx, lc, opts.Replicas); err != nil {
		return res, err
	}
	if err := waitPending(ctx, lc, opts.Replicas, opts.Timeout); err != nil {
		return res, err
	}
	phase("inflate pending", start)
	p.Printf("inflate: %d pods Pending, Unschedulable (the cluster has no node)", opts.Replicas)

	start = p.now()
	rec, err := reconciler(ctx, lc, cfg, opts)
	if err != nil {
		return res, err
	}
	res.Launcher, _ = rec.Fleet.(*fleet.Launcher)
	rep, err := oneRound(ctx, rec)
	res.Report = rep
	if err != nil {
		return res, fmt.Errorf("provisioning round: %w", err)
	}
	phase("provisioning pass", start)
	printPass(p, rep)
	if err := passFailed(rep); err != nil {
		return res, err
	}

	start = p.now()
	res.Pods, res.Nodes, err = waitRunning(ctx, lc, rep, opts.Replicas, opts.Timeout)
	if err != nil {
		return res, err
	}
	phase("nodes registered, pods running", start)
	p.Printf("%d nodes registered, %d/%d inflate pods Running", len(res.Nodes), len(res.Pods), opts.Replicas)
	return res, nil
}

// createInflate creates the example Deployment with the given replicas.
func createInflate(ctx context.Context, lc *localcloud.Cloud, replicas int) error {
	path, err := refdata.Example(WorkloadFile)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	n := int32(replicas)
	d.Spec.Replicas = &n
	if _, err := lc.Kube.AppsV1().Deployments("default").Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment inflate: %w", err)
	}
	return nil
}

// inflatePods lists the inflate Deployment's pods.
func inflatePods(ctx context.Context, lc *localcloud.Cloud) ([]corev1.Pod, error) {
	l, err := lc.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=inflate"})
	if err != nil {
		return nil, fmt.Errorf("list inflate pods: %w", err)
	}
	return l.Items, nil
}

// waitPending waits until every replica exists and kube-scheduler has found
// no node for it.
func waitPending(ctx context.Context, lc *localcloud.Cloud, replicas int, timeout time.Duration) error {
	return poll(ctx, timeout, fmt.Sprintf("%d inflate pods Pending and Unschedulable", replicas), func() (bool, string, error) {
		pods, err := inflatePods(ctx, lc)
		if err != nil {
			return false, "", err
		}
		n := 0
		for i := range pods {
			if podstate.Provisionable(&pods[i]) {
				n++
			}
		}
		return n == replicas, fmt.Sprintf("%d of %d pods exist, %d unschedulable", len(pods), replicas, n), nil
	})
}

// reconciler assembles the provision function's reconciler for the local
// cloud exactly as the function does on AWS (package setup): the AWS
// front's EC2, SSM and DynamoDB, the API server, spot prices from
// DescribeSpotPriceHistory, the instance profile and table from the stack's
// environment.
func reconciler(ctx context.Context, lc *localcloud.Cloud, cfg *Config, opts Options) (*provision.Reconciler, error) {
	awsCfg := lc.AWSConfig()
	if opts.Calls != nil {
		awsCfg = opts.Calls.Instrument(awsCfg)
	}
	return setup.Controller(ctx, setup.Options{
		Env: lc.Env(), AWS: awsCfg,
		Cluster: setup.Cluster{REST: lc.REST, Cluster: fleet.Cluster{
			Name: lc.Cluster.Name, Endpoint: lc.Cluster.Endpoint, CertificateAuthority: lc.Cluster.CAData,
			ServiceCIDR: lc.Cluster.ServiceCIDR, KubernetesVersion: lc.Cluster.Version,
		}},
		NodePools: cfg.NodePools, NodeClasses: cfg.NodeClasses, NodeOverlays: cfg.NodeOverlays, Log: opts.Log,
	})
}

// oneRound makes one provisioning round under the provision lease.
func oneRound(ctx context.Context, rec *provision.Reconciler) (*provision.Report, error) {
	lease, err := rec.Store.Acquire(ctx, state.LeaseProvision, "make-run", time.Minute)
	if err != nil {
		return nil, err
	}
	rep, err := rec.Round(ctx, lease)
	if _, rerr := rec.Store.Release(ctx, lease); rerr != nil && err == nil {
		err = rerr
	}
	return rep, err
}

// passFailed is an error naming every launch that failed and every pod the
// plan left unschedulable.
func passFailed(rep *provision.Report) error {
	var errs []error
	for _, l := range rep.Failed() {
		errs = append(errs, fmt.Errorf("launch nodeclaim %s: %s", l.NodeClaim, l.Error))
	}
	if rep.Plan == nil {
		return errors.New("provisioning round: nothing was pending")
	}
	for _, u := range rep.Plan.Unschedulable {
		errs = append(errs, fmt.Errorf("pod %s unschedulable: %s", u.Pod, u.Reason))
	}
	if len(rep.Plan.NodeClaims) == 0 {
		errs = append(errs, errors.New("the plan launches nothing"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("provisioning pass: %w", err)
	}
	return nil
}

// waitRunning waits until every inflate pod runs on a node of an instance
// the pass launched, and returns the pods and those nodes.
func waitRunning(ctx context.Context, lc *localcloud.Cloud, rep *provision.Report, replicas int, timeout time.Duration) ([]corev1.Pod, []corev1.Node, error) {
	launched := map[string]bool{}
	for _, in := range rep.Launched() {
		launched[in.InstanceID] = true
	}
	var pods []corev1.Pod
	var nodes []corev1.Node
	err := poll(ctx, timeout, fmt.Sprintf("%d inflate pods Running on the launched nodes", replicas), func() (bool, string, error) {
		var err error
		if pods, err = inflatePods(ctx, lc); err != nil {
			return false, "", err
		}
		nl, err := lc.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", fmt.Errorf("list nodes: %w", err)
		}
		ours := map[string]corev1.Node{}
		for _, n := range nl.Items {
			if launched[InstanceID(n.Spec.ProviderID)] {
				ours[n.Name] = n
			}
		}
		running, elsewhere := 0, 0
		used := map[string]bool{}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			if _, ok := ours[p.Spec.NodeName]; !ok {
				elsewhere++
				continue
			}
			running++
			used[p.Spec.NodeName] = true
		}
		if elsewhere > 0 {
			return false, "", fmt.Errorf("%d inflate pods run on nodes the pass did not launch", elsewhere)
		}
		nodes = nodes[:0]
		for name := range used {
			nodes = append(nodes, ours[name])
		}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
		return running == replicas && len(pods) == replicas,
			fmt.Sprintf("%d of %d launched instances registered, %d of %d pods Running", len(ours), len(launched), running, replicas), nil
	})
	return pods, nodes, err
}

// InstanceID is the instance of an EKS providerID (aws:///<zone>/<id>).
func InstanceID(providerID string) string {
	for i := len(providerID) - 1; i >= 0; i-- {
		if providerID[i] == '/' {
			return providerID[i+1:]
		}
	}
	return ""
}

// poll calls cond every 100 ms until it is done, fails, or timeout passes;
// a timeout error says what was awaited and the last state seen.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	state := ""
	for {
		done, s, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		state = s
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %s)", what, ctx.Err(), state)
		case <-t.C:
		}
	}
}
