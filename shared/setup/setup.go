// Package setup builds the functions' dependencies from their environment:
// the state table, the EC2 launcher, the Kubernetes client and cluster
// cache, spot prices and the deployed configuration. It exists so that the
// functions' main packages stay a few lines, and so that `make run` and the
// end-to-end tests assemble the functions exactly as Lambda does, with only
// the endpoints and credentials differing.
package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/rest"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/orchestration"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
)

// Cluster is what the functions need to know of the EKS cluster: how to
// reach its API server and what nodes need to join it.
type Cluster struct {
	fleet.Cluster
	// REST reaches the API server as the function's identity.
	REST *rest.Config
}

// Options are a function's environment.
type Options struct {
	// Env is the stack's environment variables (names.Env*).
	Env map[string]string
	AWS aws.Config
	// Cluster is resolved by the caller (EKS DescribeCluster on AWS, the
	// local cloud's description locally).
	Cluster Cluster
	// NodePools and NodeClasses, when set, replace loading the
	// configuration directory named by the environment.
	NodePools    []*apis.NodePool
	NodeClasses  []*apis.EC2NodeClass
	NodeOverlays []*apis.NodeOverlay
	// Metrics is where EMF records go (os.Stdout in Lambda; nil: none).
	Metrics io.Writer
	Now     func() time.Time
	Log     *slog.Logger
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Config loads the deployed configuration (the directory the stack's layer
// holds), unless the options carry it.
func Config(o Options) ([]*apis.NodePool, []*apis.EC2NodeClass, error) {
	cfg, err := loadConfig(o)
	if err != nil {
		return nil, nil, err
	}
	return cfg.NodePools, cfg.NodeClasses, nil
}

// loadConfig is Config with the NodeOverlays.
func loadConfig(o Options) (*apis.Config, error) {
	if len(o.NodePools) > 0 || len(o.NodeClasses) > 0 {
		return &apis.Config{NodePools: o.NodePools, NodeClasses: o.NodeClasses, NodeOverlays: o.NodeOverlays}, nil
	}
	dir := o.Env[names.EnvConfigDir]
	if dir == "" {
		return nil, fmt.Errorf("%s is not set", names.EnvConfigDir)
	}
	cfg, err := apis.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return cfg, nil
}

// Controller builds the reconciler the provision, interruption and
// consolidation functions share: the state table, the launcher, the warm
// cluster cache, node writes, the drainer, events, metrics and spot
// prices, with the deployed configuration.
func Controller(ctx context.Context, o Options) (*provision.Reconciler, error) {
	o.defaults()
	var missing []string
	for _, k := range []string{names.EnvClusterName, names.EnvTableName, names.EnvInstanceProfileName} {
		if o.Env[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("environment lacks %v", missing)
	}
	if o.Cluster.REST == nil {
		return nil, errors.New("no Kubernetes client configuration")
	}
	cfg, err := loadConfig(o)
	if err != nil {
		return nil, err
	}
	cluster := o.Env[names.EnvClusterName]
	store, err := state.New(dynamodb.NewFromConfig(o.AWS), o.Env[names.EnvTableName], cluster, o.Now)
	if err != nil {
		return nil, err
	}
	ec2c := ec2.NewFromConfig(o.AWS)
	regional := Regional(ctx, o, store, ec2c)
	cat := regional.Catalog()
	spot := &provision.SpotCache{Prices: pricing.NewEC2Prices(ec2c, o.Now), Store: store, Now: o.Now, Log: o.Log}
	launcher, err := fleet.New(fleet.Config{
		Cluster: o.Cluster.Cluster, InstanceProfile: o.Env[names.EnvInstanceProfileName],
		EC2: ec2c, SSM: ssm.NewFromConfig(o.AWS), Catalog: cat, Spot: spot, Now: o.Now, Log: o.Log,
	})
	if err != nil {
		return nil, err
	}
	kc, err := kube.New(o.Cluster.REST)
	if err != nil {
		return nil, err
	}
	r := &provision.Reconciler{
		Cluster: cluster, Store: store, Fleet: launcher, Catalog: cat, Spot: spot,
		Source: cacheSource{kube.NewCache(kc, kube.CacheOptions{Now: o.Now, Log: o.Log}), o.Now},
		Nodes:  nodeWriter{kc}, Drainer: drainer{kc, o.Now},
		NodeClaims: &nodeclaim.Objects{API: kc, Log: o.Log}, Status: kc,
		Events:    events{kube.NewRecorder(kc, kube.RecorderOptions{Instance: o.Env[envLambdaFunction], Now: o.Now, Log: o.Log})},
		NodePools: cfg.NodePools, NodeClasses: cfg.NodeClasses, NodeOverlays: cfg.NodeOverlays, Now: o.Now, Log: o.Log, Regional: regional,
	}
	if v := o.Env[names.EnvRegistrationTimeout]; v != "" {
		if r.Options.RegistrationTimeout, err = provision.ParseRegistrationTimeout(v); err != nil {
			return nil, fmt.Errorf("%s: %w", names.EnvRegistrationTimeout, err)
		}
	}
	if o.Metrics != nil {
		r.Metrics = metrics.NewEmitter(o.Metrics, o.Env[names.EnvMetricsNamespace], cluster, o.Now)
	}
	return r, nil
}

// Regional is the region's catalog (on-demand prices, offerings per zone)
// as the state table holds it: one read here, at a cold start, bounded by
// a few seconds; the shipped figures when the read fails or finds none. The
// provision sweep refreshes it from the Pricing API and EC2 in the
// background.
func Regional(ctx context.Context, o Options, store *state.Store, ec2c *ec2.Client) *pricing.Regional {
	region := o.AWS.Region
	r := &pricing.Regional{
		Region: region, Base: catalog.Default(), Store: store, Offerings: ec2c,
		Pricing: awspricing.NewFromConfig(o.AWS, func(po *awspricing.Options) { po.Region = pricing.PricingEndpointRegion(region) }),
		Now:     o.Now, Log: o.Log,
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.Load(lctx); err != nil {
		o.Log.Warn("read cached region figures: planning with the shipped ones until the next sweep", "region", region, "error", err)
	}
	return r
}

// Consolidation builds the consolidation function's run over the shared
// controller: consolidation's decisions, carried out by package
// disruption, with AMI drift resolved through the launcher.
func Consolidation(ctx context.Context, o Options) (*orchestration.Run, error) {
	o.defaults()
	r, err := Controller(ctx, o)
	if err != nil {
		return nil, err
	}
	return ConsolidationRun(r, o), nil
}

// ConsolidationRun wires a consolidation run to what the controller holds:
// its state table, zones, catalog and spot prices, and an executor over
// the rest.
func ConsolidationRun(r *provision.Reconciler, o Options) *orchestration.Run {
	o.defaults()
	run := &orchestration.Run{
		Store: r.Store, Classes: r.Fleet, Catalog: r.Catalog,
		Exec:       Executor(r, o.Now, o.Log),
		Decide:     disruption.Decide,
		SpotToSpot: true,
		Carry:      &orchestration.Carry{},
	}
	if r.Spot != nil {
		run.Spot = r.Spot
	}
	if rc, ok := r.Regional.(orchestration.RegionalCatalog); ok {
		run.Regional = rc
	}
	if l, ok := r.Fleet.(*fleet.Launcher); ok {
		run.Images = l.CurrentImages
		run.StatusChecks = l.StatusChecks
	}
	return run
}
