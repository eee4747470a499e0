// Package localcloud runs an EKS-like cluster and its AWS account on one
// machine, for `make cloud` and the end-to-end tests: a real control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler built from
// the Kubernetes modules), kwok as the kubelet of every node, and moto
// behind an AWS front (package awsfront) that adds capacity, spot prices,
// throttling and interruptions. EC2 instances that carry the cluster tag
// become Nodes (package nodebridge). Everything binds to 127.0.0.1.
package localcloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodewright/nodewright/test/localcloud/awsfront"
	"github.com/nodewright/nodewright/test/localcloud/iamauth"
	"github.com/nodewright/nodewright/test/localcloud/nodebridge"
	"github.com/nodewright/nodewright/test/localcloud/pki"
	"github.com/nodewright/nodewright/test/localcloud/proc"
)

// KubernetesVersion is the version of the control plane `make tools` builds.
const KubernetesVersion = "v1.35.4"

// ServiceCIDR is the cluster's service network (EKS's default range is
// 10.100.0.0/16 or 172.20.0.0/16; any private range serves here).
const ServiceCIDR = "10.96.0.0/16"

// Options configure a local cloud; the zero value is usable.
type Options struct {
	Cluster   string        // default "nodewright-local"
	Region    string        // default us-east-1
	Zones     []string      // default us-east-1a, us-east-1b, us-east-1c
	BootDelay time.Duration // instance running -> Node registered; default 2s
	ToolsDir  string        // default ToolsDir()
	StateDir  string        // default a new temporary directory, removed on Close
	// PriceSeed shifts the spot price model (shared/pricing.Model.Seed).
	PriceSeed uint64
	// MissingOfferings are instance types EC2 does not offer in a zone
	// (DescribeInstanceTypeOfferings leaves them out: see
	// awsfront.RemoveOffering).
	MissingOfferings []Offering
	// Reservations are capacity reservations the account holds (see
	// awsfront.AddReservation).
	Reservations []awsfront.Reservation
	Log          *slog.Logger // default JSON to <state>/localcloud.log
	// ReadyTimeout bounds the wait for each server; default 60s.
	ReadyTimeout time.Duration
	// AWSOnly starts only the AWS side (moto, the front, the seeded
	// account): for tests of the state table, queues and EC2 that need no
	// Kubernetes. Cluster, Kubeconfig and Kube stay empty.
	AWSOnly bool
	// InstallCRDs installs Nodewright's NodePool, EC2NodeClass and NodeClaim CRDs
	// (shared/apis/crds), as a cluster that never ran Karpenter would
	// (ignored with AWSOnly).
	InstallCRDs bool
	// Scale options, for the scale benchmark (test/scale): a cluster of
	// thousands of nodes whose objects are written straight into etcd.
	//
	// EtcdData is an etcd data directory (of a cloud stopped cleanly) that
	// etcd starts from, copied into the state directory: a restore.
	EtcdData string
	// EtcdQuota is etcd's space quota in bytes (0: etcd's default, 2 GiB).
	EtcdQuota int64
	// DisableControllers are kube-controller-manager controllers left off
	// (e.g. "nodelifecycle", "replicaset": objects written into etcd that
	// no controller should act on).
	DisableControllers []string
	// NodeHeartbeat is how often kwok renews a node's Ready condition
	// (0: kwok's stage, every 20-45 s; thousands of nodes want minutes);
	// the node lifecycle controller then waits three of them before it
	// marks a node unhealthy.
	NodeHeartbeat time.Duration
	// NoNodeBridge leaves the node bridge off: instances do not become
	// Nodes (the caller registers them).
	NoNodeBridge bool
	// SubnetPrefix is the seeded subnets' prefix length (0: /24, 251
	// addresses a zone; 20 gives 4,091).
	SubnetPrefix int
}

func (o *Options) defaults() {
	if o.Cluster == "" {
		o.Cluster = "nodewright-local"
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{o.Region + "a", o.Region + "b", o.Region + "c"}
	}
	if o.BootDelay == 0 {
		o.BootDelay = 2 * time.Second
	}
	if o.ToolsDir == "" {
		o.ToolsDir = ToolsDir()
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 60 * time.Second
	}
}

// Offering is an instance type in a zone.
type Offering struct {
	InstanceType string `yaml:"instanceType"`
	Zone         string `yaml:"zone"`
}

// Cluster describes the EKS-like cluster as EKS DescribeCluster would.
type Cluster struct {
	Name     string
	Endpoint string // https://127.0.0.1:<port>
	CAData   []byte // PEM; EKS returns it base64-encoded
	Version  string // minor, e.g. "1.35"
	// ServiceCIDR is the Kubernetes service network (EKS reports it as
	// kubernetesNetworkConfig.serviceIpv4Cidr).
	ServiceCIDR string
}

// Cloud is a running local cloud.
type Cloud struct {
	Options Options
	Cluster Cluster
	Names   Names
	AWS     *awsfront.Front // fault injection; AWS.URL() is the endpoint
	// IAM is the API server's token webhook: EKS-style IAM authentication
	// of the functions' roles (see FunctionRoleARN).
	IAM    *iamauth.Authenticator
	Seeded *AWSResources
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	REST       *rest.Config
	Kube       kubernetes.Interface
	StateDir   string
	MotoURL    string
	// EtcdURL is etcd's client endpoint (its v3 JSON gateway serves
	// /v3/kv/...).
	EtcdURL string

	log       *slog.Logger
	logFile   *os.File
	ownState  bool
	procs     []*proc.Process
	bridgeCtl context.CancelFunc
	bridgeWG  sync.WaitGroup
	awsURL    atomic.Pointer[string] // the front's URL, for the token webhook
	closeOnce sync.Once
	closeErr  error
}

// runDir holds the pid files of every local cloud on the machine, so a
// start can find processes that a killed test left behind.
func runDir() string { return filepath.Join(os.TempDir(), "nodewright-localcloud", "run") }

// Start brings the local cloud up and returns when every part is ready.
// On error everything started so far is stopped.
func Start(ctx context.Context, opts Options) (c *Cloud, err error) {
	opts.defaults()
	t, err := findTools(opts.ToolsDir, opts.AWSOnly)
	if err != nil {
		return nil, err
	}
	c = &Cloud{Options: opts, Names: NamesFor(opts.Cluster)}
	if err := c.initState(); err != nil {
		return nil, err
	}
	started := c // the returns below set c to nil: stop what was started
	defer func() {
		if err != nil {
			started.Close()
			c = nil
		}
	}()
	if err := proc.Reap(ctx, runDir(), c.log); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := c.up(ctx, t); err != nil {
		return nil, err
	}
	if opts.InstallCRDs && !opts.AWSOnly {
		if err := c.InstallCRDs(ctx); err != nil {
			return nil, err
		}
	}
	c.log.Info("local cloud ready", "elapsed", time.Since(start).String(), "endpoint", c.Cluster.Endpoint, "aws", c.AWS.URL(), "kubeconfig", c.Kubeconfig)
	return c, nil
}

func (c *Cloud) initState() error {
	c.StateDir = c.Options.StateDir
	if c.StateDir == "" {
		d, err := os.MkdirTemp("", "nodewright-localcloud-")
		if err != nil {
			return fmt.Errorf("local cloud state dir: %w", err)
		}
		c.StateDir, c.ownState = d, true
	}
	if err := os.MkdirAll(logDir(c.StateDir), 0o755); err != nil {
		return fmt.Errorf("local cloud state dir: %w", err)
	}
	c.log = c.Options.Log
	if c.log == nil {
		f, err := os.OpenFile(filepath.Join(logDir(c.StateDir), "localcloud.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("local cloud log: %w", err)
		}
		c.logFile = f
		c.log = slog.New(slog.NewJSONHandler(f, nil))
	}
	c.log = c.log.With("cluster", c.Options.Cluster)
	return nil
}

// up starts the servers: moto and etcd first, the API server when etcd is
// ready, then the controller manager, scheduler and kwok; AWS is seeded
// while the control plane comes up.
func (c *Cloud) up(ctx context.Context, t tools) error {
	p, err := freePorts()
	if err != nil {
		return err
	}
	creds, err := pki.Write(filepath.Join(c.StateDir, "pki"), time.Now())
	if err != nil {
		return err
	}
	c.Cluster = Cluster{Name: c.Options.Cluster, Endpoint: loopURL("https", p.apiserver), CAData: creds.CAPEM, Version: minorOf(KubernetesVersion), ServiceCIDR: ServiceCIDR}
	c.Kubeconfig = filepath.Join(c.StateDir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Cluster, creds.AdminToken); err != nil {
		return err
	}
	c.MotoURL = loopURL("http", p.moto)
	c.EtcdURL = loopURL("http", p.etcd)
	if c.Options.NodeHeartbeat > 0 {
		if t.stages, err = heartbeatStages(t.stages, c.Options.NodeHeartbeat, mkdir(c.StateDir, "kwok-stage")); err != nil {
			return err
		}
	}

	moto, err := c.start(motoComponent(t, p, mkdir(c.StateDir, "moto")))
	if err != nil {
		return err
	}
	if c.Options.AWSOnly {
		return c.upAWS(ctx, moto)
	}
	webhookConfig, err := c.startIAM()
	if err != nil {
		return err
	}
	awsDone := make(chan error, 1)
	go func() { awsDone <- c.upAWS(ctx, moto) }()

	etcdDir := filepath.Join(c.StateDir, "etcd")
	if c.Options.EtcdData != "" {
		if err := CopyDir(c.Options.EtcdData, etcdDir); err != nil {
			return errors.Join(err, <-awsDone)
		}
	}
	if err := c.startReady(ctx, etcdComponent(t, p, etcdDir, c.Options.EtcdQuota)); err != nil {
		return errors.Join(err, <-awsDone)
	}
	if err := c.startReady(ctx, apiserverComponent(t, p, creds, mkdir(c.StateDir, "apiserver-certs"), webhookConfig)); err != nil {
		return errors.Join(err, <-awsDone)
	}
	if err := c.upControllers(ctx, t, p, creds); err != nil {
		return errors.Join(err, <-awsDone)
	}
	if err := <-awsDone; err != nil {
		return err
	}
	if !c.Options.NoNodeBridge {
		c.startBridge()
	}
	return nil
}

// upControllers starts the controller manager, scheduler and kwok together
// and waits for all three and for the default ServiceAccount.
func (c *Cloud) upControllers(ctx context.Context, t tools, p ports, creds *pki.Files) error {
	if err := c.kubeClient(creds); err != nil {
		return err
	}
	// Each with its port: a port found free may be taken by another local
	// cloud's server before this one binds it, and the server is then
	// started again on another.
	build := []func(p ports) component{
		func(p ports) component {
			return kcmComponent(t, p, creds, c.Kubeconfig, c.Options.DisableControllers, c.Options.NodeHeartbeat)
		},
		func(p ports) component { return schedulerComponent(t, p, c.Kubeconfig) },
		func(p ports) component { return kwokComponent(t, p, c.Kubeconfig) },
	}
	port := []func(p *ports) *int{
		func(p *ports) *int { return &p.kcm }, func(p *ports) *int { return &p.scheduler }, func(p *ports) *int { return &p.kwok },
	}
	comps := make([]component, len(build))
	started := make([]*proc.Process, len(build))
	for i := range build {
		comps[i] = build[i](p)
		pr, err := c.start(comps[i])
		if err != nil {
			return err
		}
		started[i] = pr
	}
	errs := make([]error, len(comps))
	var wg sync.WaitGroup
	for i := range comps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pp := p
			for attempt := 1; ; attempt++ {
				errs[i] = c.waitReady(ctx, started[i], comps[i].ready)
				if errs[i] == nil || attempt == 3 || !portTaken(started[i]) {
					return
				}
				n, err := freePort()
				if err != nil {
					return
				}
				*port[i](&pp) = n
				c.log.Info("port taken: starting again on another", "process", started[i].Name, "port", n)
				comps[i] = build[i](pp)
				if started[i], err = c.start(comps[i]); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	saStart := time.Now()
	if err := c.waitDefaultServiceAccount(ctx); err != nil {
		return err
	}
	c.log.Info("ready", "process", "default service account", "waited", time.Since(saStart).String())
	return nil
}

// upAWS waits for moto, starts the front and seeds the account.
func (c *Cloud) upAWS(ctx context.Context, moto *proc.Process) error {
	if err := c.waitReady(ctx, moto, httpReady(plainClient(), c.MotoURL+"/moto-api/data.json", "")); err != nil {
		return err
	}
	seedStart := time.Now()
	defer func() { c.log.Info("AWS seeded", "took", time.Since(seedStart).String()) }()
	direct := awsfront.DirectConfig(c.MotoURL, c.Options.Region)
	sd := &seeder{
		cluster: c.Options.Cluster, minor: c.Cluster.Version, zones: c.Options.Zones, physical: c.Names, subnetPrefix: c.Options.SubnetPrefix,
		ec2: ec2.NewFromConfig(direct), ddb: dynamodb.NewFromConfig(direct), sqs: sqs.NewFromConfig(direct),
	}
	res, err := sd.seed(ctx)
	if err != nil {
		return err
	}
	c.Seeded = res
	front, err := awsfront.New(awsfront.Config{
		MotoURL: c.MotoURL, Region: c.Options.Region, Zones: c.Options.Zones,
		Prices: newCatalogAdapter(c.Options.PriceSeed, c.Options.Region), QueueURL: res.QueueURL, RecheckQueueURL: res.RecheckQueueURL, Log: c.log,
	})
	if err != nil {
		return err
	}
	for name, v := range res.Parameters {
		front.SetPublicParameter(name, v)
	}
	for _, o := range c.Options.MissingOfferings {
		front.RemoveOffering(o.InstanceType, o.Zone)
	}
	for _, r := range c.Options.Reservations {
		front.AddReservation(r)
	}
	front.SetEKSCluster(awsfront.EKSCluster{Name: c.Cluster.Name, Endpoint: c.Cluster.Endpoint, Version: c.Cluster.Version,
		ServiceCIDR: c.Cluster.ServiceCIDR, CAData: c.Cluster.CAData})
	if err := front.Start(); err != nil {
		return err
	}
	c.AWS = front
	u := front.URL()
	c.awsURL.Store(&u)
	return nil
}

func (c *Cloud) startBridge() {
	ctx, cancel := context.WithCancel(context.Background())
	c.bridgeCtl = cancel
	b := nodebridge.New(nodebridge.Config{
		Cluster: c.Options.Cluster, Region: c.Options.Region, KubeletVersion: KubernetesVersion,
		BootDelay: c.Options.BootDelay, EC2: ec2.NewFromConfig(awsfront.DirectConfig(c.MotoURL, c.Options.Region)),
		Kube: c.Kube, Catalog: newCatalogAdapter(c.Options.PriceSeed, c.Options.Region), Log: c.log,
	})
	c.bridgeWG.Add(1)
	go func() {
		defer c.bridgeWG.Done()
		b.Run(ctx)
	}()
}

// AWSConfig is an SDK config for the functions: it talks to the AWS front
// with static test credentials, as the functions talk to AWS.
func (c *Cloud) AWSConfig() aws.Config {
	return awsfront.DirectConfig(c.AWS.URL(), c.Options.Region)
}

func (c *Cloud) start(comp component) (*proc.Process, error) {
	pr, err := proc.Start(comp.spec, logDir(c.StateDir), runDir())
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, pr)
	c.log.Info("started", "process", pr.Name, "pid", pr.Pid, "log", pr.LogPath)
	return pr, nil
}

func (c *Cloud) startReady(ctx context.Context, comp component) error {
	pr, err := c.start(comp)
	if err != nil {
		return err
	}
	return c.waitReady(ctx, pr, comp.ready)
}

// waitReady waits for the process's probe and logs how long it took.
func (c *Cloud) waitReady(ctx context.Context, pr *proc.Process, probe func(context.Context) error) error {
	start := time.Now()
	if err := waitReady(ctx, pr, probe, c.Options.ReadyTimeout); err != nil {
		return err
	}
	c.log.Info("ready", "process", pr.Name, "waited", time.Since(start).String())
	return nil
}

// Processes returns the server processes (for tests that check cleanup).
func (c *Cloud) Processes() []*proc.Process { return append([]*proc.Process(nil), c.procs...) }

// RSS is the resident memory of the server processes and their children
// (the AWS front and the node bridge run in the caller's process).
func (c *Cloud) RSS() (map[string]int64, int64) {
	per := map[string]int64{}
	var total int64
	for _, p := range c.procs {
		n, _ := p.RSS()
		per[p.Name] = n
		total += n
	}
	return per, total
}

// LogTails returns the last n lines of every server's log, by name.
func (c *Cloud) LogTails(n int) map[string]string {
	out := map[string]string{}
	for _, p := range c.procs {
		out[p.Name] = proc.Tail(p.LogPath, n)
	}
	out["localcloud"] = proc.Tail(filepath.Join(logDir(c.StateDir), "localcloud.log"), n)
	return out
}

// Close stops the bridge, the front and every process (their process
// groups), and removes the state directory if Start made it.
func (c *Cloud) Close() error {
	c.closeOnce.Do(func() {
		if c.bridgeCtl != nil {
			c.bridgeCtl()
			c.bridgeWG.Wait()
		}
		var errs []error
		if c.IAM != nil {
			errs = append(errs, c.IAM.Close())
		}
		if c.AWS != nil {
			errs = append(errs, c.AWS.Close())
		}
		var wg sync.WaitGroup
		for _, p := range c.procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = p.Stop(5 * time.Second)
			}()
		}
		wg.Wait()
		if c.logFile != nil {
			c.logFile.Close()
		}
		if c.ownState {
			errs = append(errs, os.RemoveAll(c.StateDir))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

func mkdir(parent, name string) string {
	d := filepath.Join(parent, name)
	_ = os.MkdirAll(d, 0o755)
	return d
}

// minorOf turns v1.35.4 into 1.35.
func minorOf(v string) string {
	v = v[1:]
	for i, dots := 0, 0; i < len(v); i++ {
		if v[i] == '.' {
			dots++
			if dots == 2 {
				return v[:i]
			}
		}
	}
	return v
}

// portTaken says whether a server that exited failed to bind its port.
func portTaken(p *proc.Process) bool {
	exited, _ := p.Exited()
	return exited && strings.Contains(proc.Tail(p.LogPath, 20), "address already in use")
}
