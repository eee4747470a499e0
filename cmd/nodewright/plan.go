package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/nodecost"
	"github.com/nodewright/nodewright/shared/overlay"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/snapshot"
)

const planUsage = `Usage: nodewright plan [-f FILE]... [flags]

Reads a cluster snapshot and prints, as JSON, the plan Nodewright would carry
out: the NodeClaims to launch (pool, instance types cheapest first, capacity
type, zones, price, pods), the pending pods that fit on existing nodes, the
pods nothing can take (with the reason), and the plan's price per hour next to
a lower bound.

The snapshot is YAML or JSON: the output of
  kubectl get pods,nodes,daemonsets,pvc,pv,storageclasses,nodepools,ec2nodeclasses -A -o yaml
and/or manifests (Pods, Deployments, ReplicaSets, StatefulSets, Jobs,
DaemonSets, PersistentVolumeClaims, PersistentVolumes, StorageClasses,
NodePools, EC2NodeClasses). Pods without spec.nodeName are pending; a
workload adds the replicas the snapshot does not already hold. With volume
objects in the snapshot, a pod's volumes restrict its node (a bound
volume's zone, a StorageClass's allowed zones).
The region is -region, else the snapshot's nodes' topology.kubernetes.io/region,
else the AWS configuration's, else us-east-1. Its on-demand prices and the
zones each type is offered in come from -prices FILE (written by 'nodewright
prices'), else for us-east-1 from the built-in table, else from the Pricing API
and EC2 where AWS credentials allow; otherwise the plan fails: it never uses
another region's prices. The plan's "prices" says which it used.

Flags:
`

// planFlags are the plan command's options.
type planFlags struct {
	files       []string
	zones       string
	region      string
	spotModel   string
	spotSeed    uint64
	maxTypes    int
	minValues   string
	preferences string
	pretty      bool
	prices      string
	aws         awsFlags
	regionSet   bool
	filesGiven  bool
}

// fileList is a repeatable -f flag.
type fileList struct{ files *[]string }

func (f fileList) String() string {
	if f.files == nil {
		return ""
	}
	return strings.Join(*f.files, ",")
}

func (f fileList) Set(v string) error {
	*f.files = append(*f.files, v)
	return nil
}

func parsePlanFlags(args []string, stderr io.Writer) (*planFlags, error) {
	pf := &planFlags{}
	fs := flag.NewFlagSet("nodewright plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), planUsage)
		fs.PrintDefaults()
	}
	fs.Var(fileList{&pf.files}, "f", "snapshot `FILE` (repeatable; - or none reads stdin)")
	fs.Var(fileList{&pf.files}, "filename", "same as -f")
	fs.StringVar(&pf.zones, "zones", "", "comma-separated `ZONES` the cluster has subnets in (default <region>a,<region>b,<region>c)")
	fs.StringVar(&pf.region, "region", "", "AWS `REGION` whose prices and offerings to plan with (default: the snapshot's nodes', else the AWS configuration's, else us-east-1)")
	fs.StringVar(&pf.prices, "prices", "", "the region's figures from `FILE` ('nodewright prices -region R -o FILE' writes one)")
	pf.aws.registerAWS(fs)
	fs.StringVar(&pf.spotModel, "spot-model", "0", "`SEED` of the deterministic spot price model, or off for no spot offerings")
	fs.IntVar(&pf.maxTypes, "max-instance-types", scheduling.DefaultMaxInstanceTypes, "instance types offered per NodeClaim at most")
	fs.StringVar(&pf.minValues, "min-values-policy", string(scheduling.MinValuesStrict), "`POLICY` when a NodeClaim's types cannot keep a NodePool's minValues: Strict (the pods stay pending) or BestEffort (launch with fewer, and say so)")
	fs.StringVar(&pf.preferences, "preference-policy", string(scheduling.PreferencesRespect), "`POLICY` for pods' preferred affinity and ScheduleAnyway spreads: Respect (honoured while they can be, then relaxed) or Ignore (left out)")
	fs.BoolVar(&pf.pretty, "pretty", false, "indent the JSON")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (files go after -f)", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "region":
			pf.regionSet = true
		case "f", "filename":
			pf.filesGiven = true
		}
	})
	return pf, nil
}

// plan runs `nodewright plan`.
func (c cli) plan(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	pf, err := parsePlanFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright plan: %v\n", err)
		return exitUsage
	}
	in, err := pf.input()
	if err != nil {
		fmt.Fprintf(stderr, "nodewright plan: %v\n", err)
		return exitUsage
	}
	snap, err := readSnapshot(pf.files, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright plan: bad snapshot:\n%s\n", indent(err.Error()))
		return exitError
	}
	for _, w := range snap.Warnings {
		fmt.Fprintf(stderr, "nodewright plan: warning: %s\n", w)
	}
	s := snap.Input()
	in.Pods, in.Nodes, in.NodePools, in.NodeClasses, in.DaemonSets, in.Volumes = s.Pods, s.Nodes, s.NodePools, s.NodeClasses, s.DaemonSets, s.Volumes
	if pf.region == "" {
		if pf.region, err = snapshotRegion(s.Nodes); err != nil {
			fmt.Fprintf(stderr, "nodewright plan: %v\n", err)
			return exitError
		}
	}
	if pf.region == "" && c.pricesDeps.region != nil {
		pf.region = c.pricesDeps.region(context.Background(), pf.aws)
	}
	if pf.region == "" {
		pf.region = catalog.ShippedPricesRegion
	}
	if in.Zones, err = pf.zoneList(); err != nil {
		fmt.Fprintf(stderr, "nodewright plan: %v\n", err)
		return exitUsage
	}
	choice, err := c.planFigures(pf.region, pf.prices, pf.aws)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright plan: %v\n", err)
		return exitError
	}
	cat := choice.Catalog(catalog.Default())
	in.InstanceTypes = cat.Types()
	if in.Spot != nil {
		in.Spot = pricing.Model{Catalog: cat, Seed: pf.spotSeed}
	}
	overlaid := overlay.Apply(in.InstanceTypes, in.Spot, snap.NodeOverlays)
	in.InstanceTypes, in.Spot, in.Capacity = overlaid.Types, overlaid.Spot, overlaid.Capacity
	for _, c := range overlaid.Conflicts {
		fmt.Fprintf(stderr, "nodewright plan: warning: %s\n", c)
	}
	costs, err := planNodeCosts(in, pf.region)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright plan: %v\n", err)
		return exitError
	}
	in.NodeCosts = nodecost.PerHour(costs.Pools)
	res, err := c.solve(in)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright plan: %v\n", err)
		return exitError
	}
	if err := writeResult(stdout, res, choice, costs, pf.pretty); err != nil {
		fmt.Fprintf(stderr, "nodewright plan: write plan: %v\n", err)
		return exitError
	}
	return exitOK
}

// input is the solve input the flags describe (without the snapshot).
func (pf *planFlags) input() (scheduling.Input, error) {
	in := scheduling.Input{InstanceTypes: catalog.Default().Types(), MaxInstanceTypes: pf.maxTypes}
	if pf.maxTypes < 1 {
		return in, fmt.Errorf("--max-instance-types %d: must be at least 1", pf.maxTypes)
	}
	switch p := scheduling.MinValuesPolicy(pf.minValues); p {
	case scheduling.MinValuesStrict, scheduling.MinValuesBestEffort:
		in.MinValuesPolicy = p
	default:
		return in, fmt.Errorf("--min-values-policy %q: want %s or %s", pf.minValues, scheduling.MinValuesStrict, scheduling.MinValuesBestEffort)
	}
	switch p := scheduling.PreferencePolicy(pf.preferences); p {
	case scheduling.PreferencesRespect, scheduling.PreferencesIgnore:
		in.PreferencePolicy = p
	default:
		return in, fmt.Errorf("--preference-policy %q: want %s or %s", pf.preferences, scheduling.PreferencesRespect, scheduling.PreferencesIgnore)
	}
	if pf.zones != "" {
		// Checked before the snapshot is read (the region may come from it).
		if _, err := pf.zoneList(); err != nil {
			return in, err
		}
	}
	switch pf.spotModel {
	case "off":
	default:
		seed, err := strconv.ParseUint(pf.spotModel, 10, 64)
		if err != nil {
			return in, fmt.Errorf("--spot-model %q: want a seed (a non-negative integer) or off", pf.spotModel)
		}
		pf.spotSeed = seed
		in.Spot = pricing.Model{Catalog: catalog.Default(), Seed: seed}
	}
	return in, nil
}

// snapshotRegion is the region the snapshot's nodes are labelled with (""
// when none is); nodes of several regions are an error.
func snapshotRegion(nodes []*scheduling.Node) (string, error) {
	region := ""
	for _, n := range nodes {
		if n.Node == nil {
			continue
		}
		r := n.Node.Labels[apis.LabelRegion]
		switch {
		case r == "" || r == region:
		case region == "":
			region = r
		default:
			return "", fmt.Errorf("the snapshot's nodes are in regions %s and %s: pass -region", region, r)
		}
	}
	return region, nil
}

func (pf *planFlags) zoneList() ([]string, error) {
	if pf.zones == "" {
		return []string{pf.region + "a", pf.region + "b", pf.region + "c"}, nil
	}
	var zones []string
	seen := map[string]bool{}
	for _, z := range strings.Split(pf.zones, ",") {
		z = strings.TrimSpace(z)
		switch {
		case z == "":
			return nil, fmt.Errorf("--zones %q: empty zone name", pf.zones)
		case pf.regionSet && !strings.HasPrefix(z, pf.region):
			return nil, fmt.Errorf("--zones: %s is not a zone of --region %s", z, pf.region)
		case seen[z]:
			continue
		}
		seen[z] = true
		zones = append(zones, z)
	}
	return zones, nil
}

// readSnapshot reads the files, or stdin for "-" or when none are given.
func readSnapshot(files []string, stdin io.Reader) (*snapshot.Snapshot, error) {
	if len(files) == 0 {
		files = []string{"-"}
	}
	var sources []snapshot.Source
	var paths []string
	usedStdin := false
	for _, f := range files {
		if f != "-" {
			paths = append(paths, f)
			continue
		}
		if usedStdin {
			return nil, errors.New("-f -: stdin can be read only once")
		}
		usedStdin = true
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		sources = append(sources, snapshot.Source{Name: "stdin", Data: data})
	}
	fileSources, err := readFiles(paths)
	if err != nil {
		return nil, err
	}
	return snapshot.Read(append(sources, fileSources...)...)
}

func readFiles(paths []string) ([]snapshot.Source, error) {
	var out []snapshot.Source
	var errs []error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("read snapshot file: %w", err))
			continue
		}
		out = append(out, snapshot.Source{Name: p, Data: data})
	}
	return out, errors.Join(errs...)
}

// planOutput is the plan and the figures it was priced with.
type planOutput struct {
	scheduling.Result
	Prices    pricing.Choice `json:"prices"`
	NodeCosts nodeCosts      `json:"nodeCosts"`
}

// nodeCosts are what a node of each NodePool costs beyond its instance,
// part by part (a NodeClaim's pricePerHour is its instance's price plus its
// nodeCostPerHour, their sum), and the rates they were priced at.
type nodeCosts struct {
	Region string                    `json:"region"`
	AsOf   string                    `json:"asOf"`
	Pools  map[string]nodecost.Parts `json:"pools"`
}

// planNodeCosts prices each pool's volumes and public IPv4 address at the
// region's rates. The snapshot holds no subnets: only the class's
// associatePublicIPAddress turns the address on.
func planNodeCosts(in scheduling.Input, region string) (nodeCosts, error) {
	rates, _ := nodecost.For(region)
	pools, err := nodecost.PerPool(in.NodePools, in.NodeClasses, nil, rates)
	if err != nil {
		return nodeCosts{}, err
	}
	return nodeCosts{Region: rates.Region, AsOf: rates.AsOf, Pools: pools}, nil
}

// writeResult prints the plan; empty lists print as [] rather than null.
func writeResult(w io.Writer, res *scheduling.Result, prices pricing.Choice, costs nodeCosts, pretty bool) error {
	out := *res
	if out.NodeClaims == nil {
		out.NodeClaims = []scheduling.NodeClaim{}
	}
	if out.ExistingNodes == nil {
		out.ExistingNodes = []scheduling.NodePlacement{}
	}
	if out.Unschedulable == nil {
		out.Unschedulable = []scheduling.Unschedulable{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(planOutput{Result: out, Prices: prices, NodeCosts: costs})
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
