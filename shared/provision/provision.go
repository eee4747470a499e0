// Package provision is the core of one provisioning pass: read the cluster
// (pods, nodes, daemonsets, the configured NodePools and EC2NodeClasses,
// spot prices, the zones the node classes have subnets in), solve, and
// launch every planned NodeClaim with shared/fleet. It exists so that the
// provision function, `make run` and the end-to-end tests run the same
// pass; the function adds around it what a long-running deployment needs
// (a DynamoDB lease, batching of triggers, the offerings EC2 refused
// recently, in-flight NodeClaims, garbage collection).
package provision

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/snapshot"
)

// DefaultParallelism is how many NodeClaims a pass launches at once.
const DefaultParallelism = 10

// Cluster lists what a pass reads from the API server.
type Cluster interface {
	Pods(ctx context.Context) ([]corev1.Pod, error)
	Nodes(ctx context.Context) ([]corev1.Node, error)
	DaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error)
}

// Launcher resolves node classes' zones and launches NodeClaims
// (*fleet.Launcher).
type Launcher interface {
	Zones(ctx context.Context, classes []*apis.EC2NodeClass) ([]string, error)
	Launch(ctx context.Context, req fleet.Request) (*fleet.Instance, error)
}

// SpotPrices are the region's spot prices (*pricing.EC2Prices).
type SpotPrices interface {
	catalog.SpotPricer
	Refresh(ctx context.Context) error
}

// Config is what a pass works with.
type Config struct {
	Cluster     Cluster
	Launcher    Launcher
	Spot        SpotPrices // nil: no spot offerings
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	Catalog     *catalog.Catalog
	// Names names new NodeClaims (default fleet.NodeClaimName with
	// crypto/rand).
	Names func(nodePool string) (string, error)
	// Unavailable reports offerings EC2 refused recently (nil: none).
	Unavailable func(instanceType, zone, capacityType string) bool
	Parallelism int // launches at once; 0: DefaultParallelism
	Now         func() time.Time
	Log         *slog.Logger
}

func (c *Config) defaults() error {
	if c.Cluster == nil || c.Launcher == nil || c.Catalog == nil {
		return errors.New("provision: config needs Cluster, Launcher and Catalog")
	}
	if c.Names == nil {
		c.Names = func(pool string) (string, error) { return fleet.NodeClaimName(pool, rand.Reader) }
	}
	if c.Parallelism <= 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Report is what a pass saw, planned and launched, and how long each phase
// took.
type Report struct {
	Pending  int      `json:"pending"`
	Nodes    int      `json:"nodes"`
	Zones    []string `json:"zones"`
	Warnings []string `json:"warnings,omitempty"`
	// Plan is the solve's result; Launches follow its NodeClaims' order.
	Plan     *scheduling.Result `json:"plan"`
	Launches []Launch           `json:"launches"`
	Read     time.Duration      `json:"read"`
	Solve    time.Duration      `json:"solve"`
	Launch   time.Duration      `json:"launch"`
}

// Launch is one planned NodeClaim and what launching it gave.
type Launch struct {
	NodeClaim string                      `json:"nodeClaim"`
	Claim     scheduling.NodeClaim        `json:"claim"`
	Instance  *fleet.Instance             `json:"instance,omitempty"`
	Err       error                       `json:"-"`
	Error     string                      `json:"error,omitempty"`
	Refused   []fleet.UnavailableOffering `json:"refused,omitempty"`
}

// Launched returns the instances the pass launched, in plan order.
func (r *Report) Launched() []*fleet.Instance {
	var out []*fleet.Instance
	for _, l := range r.Launches {
		if l.Instance != nil {
			out = append(out, l.Instance)
		}
	}
	return out
}

// Failed returns the launches that failed.
func (r *Report) Failed() []Launch {
	var out []Launch
	for _, l := range r.Launches {
		if l.Err != nil {
			out = append(out, l)
		}
	}
	return out
}

// PricePerHour is the price of what the pass launched.
func (r *Report) PricePerHour() float64 {
	var sum float64
	for _, in := range r.Launched() {
		sum += in.PricePerHour
	}
	return sum
}

// Run makes one pass. It fails when it cannot read the cluster or solve;
// launches that fail are in the report (each with its error), so the
// caller sees every outcome of the plan.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	rep := &Report{}
	start := cfg.Now()
	in, err := read(ctx, &cfg, rep)
	rep.Read = cfg.Now().Sub(start)
	if err != nil {
		return rep, err
	}
	start = cfg.Now()
	plan, err := scheduling.Solve(in)
	rep.Solve = cfg.Now().Sub(start)
	if err != nil {
		return rep, fmt.Errorf("solve: %w", err)
	}
	rep.Plan = plan
	cfg.Log.Info("plan", "pending", rep.Pending, "nodeClaims", len(plan.NodeClaims), "onExistingNodes", len(plan.ExistingNodes),
		"unschedulable", len(plan.Unschedulable), "pricePerHour", plan.PricePerHour, "solve", rep.Solve.String())
	start = cfg.Now()
	rep.Launches = launchAll(ctx, &cfg, plan.NodeClaims)
	rep.Launch = cfg.Now().Sub(start)
	return rep, nil
}

// read lists the cluster, refreshes spot prices and resolves the zones, all
// at once, and builds the solve's input.
func read(ctx context.Context, cfg *Config, rep *Report) (scheduling.Input, error) {
	var (
		wg         sync.WaitGroup
		pods       []corev1.Pod
		nodes      []corev1.Node
		daemonSets []appsv1.DaemonSet
		zones      []string
		errs       = make([]error, 5)
	)
	steps := []func(){
		func() { pods, errs[0] = cfg.Cluster.Pods(ctx) },
		func() { nodes, errs[1] = cfg.Cluster.Nodes(ctx) },
		func() { daemonSets, errs[2] = cfg.Cluster.DaemonSets(ctx) },
		func() { zones, errs[3] = cfg.Launcher.Zones(ctx, cfg.NodeClasses) },
		func() {
			if cfg.Spot != nil {
				errs[4] = cfg.Spot.Refresh(ctx)
			}
		},
	}
	for _, step := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			step()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[0], errs[1], errs[2]); err != nil {
		return scheduling.Input{}, fmt.Errorf("read cluster: %w", err)
	}
	if errs[3] != nil {
		if len(zones) == 0 {
			return scheduling.Input{}, fmt.Errorf("read node classes: %w", errs[3])
		}
		rep.Warnings = append(rep.Warnings, errs[3].Error())
	}
	if errs[4] != nil {
		// Without current prices a pass can still launch on-demand.
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("spot prices: %v (planning on-demand only)", errs[4]))
	}
	snap := snapshot.FromCluster(snapshot.Cluster{Pods: pods, Nodes: nodes, DaemonSets: daemonSets, NodePools: cfg.NodePools, NodeClasses: cfg.NodeClasses})
	rep.Warnings = append(rep.Warnings, snap.Warnings...)
	rep.Pending, rep.Nodes, rep.Zones = len(snap.Pending), len(snap.Nodes), zones
	in := snap.Input()
	in.InstanceTypes, in.Zones, in.Unavailable = cfg.Catalog.Types(), zones, cfg.Unavailable
	if cfg.Spot != nil && errs[4] == nil {
		in.Spot = cfg.Spot
	}
	return in, nil
}

// launchAll launches the claims, Parallelism at a time; the result is in
// claim order.
func launchAll(ctx context.Context, cfg *Config, claims []scheduling.NodeClaim) []Launch {
	classes := map[string]*apis.EC2NodeClass{}
	for _, nc := range cfg.NodeClasses {
		classes[nc.Name] = nc
	}
	out := make([]Launch, len(claims))
	sem := make(chan struct{}, cfg.Parallelism)
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = launchOne(ctx, cfg, c, classes[c.NodeClass])
		}()
	}
	wg.Wait()
	return out
}

func launchOne(ctx context.Context, cfg *Config, c scheduling.NodeClaim, nc *apis.EC2NodeClass) Launch {
	l := Launch{Claim: c}
	name, err := cfg.Names(c.NodePool)
	if err != nil {
		return l.failed(err)
	}
	l.NodeClaim = name
	if nc == nil {
		return l.failed(fmt.Errorf("launch nodeclaim %s: NodePool %s: EC2NodeClass %q is not configured", name, c.NodePool, c.NodeClass))
	}
	inst, err := cfg.Launcher.Launch(ctx, fleet.Request{Name: name, Claim: c, NodeClass: nc})
	if err != nil {
		cfg.Log.Warn("launch failed", "nodeClaim", name, "nodePool", c.NodePool, "error", err.Error())
		return l.failed(err)
	}
	l.Instance, l.Refused = inst, inst.Unavailable
	return l
}

func (l Launch) failed(err error) Launch {
	l.Err, l.Error, l.Refused = err, err.Error(), fleet.UnavailableOfferings(err)
	return l
}
