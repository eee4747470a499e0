// Package scale is the scale benchmark of issue 22 (`make bench-scale`):
// it builds a cluster of a fraction of 5,000 nodes and 150,000 pods on the
// local cloud (Nodes of instances Nodewright launched, pods already bound,
// Nodewright's records, NodeClaim objects and EC2 instances), keeps it as a
// snapshot (etcd's data directory, the state table's items and the launch
// plan that gives moto the same instance IDs again), and measures each
// function's pass on it, cold and warm: wall and CPU time, peak heap, API
// server requests and bytes, DynamoDB read and write units. It writes a
// table and a plot per cost against cluster size into the docs and the raw
// figures into testdata/figures.json. `make test` runs a smoke run at 1%
// and 2% that asserts how the costs grow between them.
package scale

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Version keys the snapshot cache: change it when the builder changes, so
// that a cached cluster of the old builder is rebuilt.
const Version = 2

// The design point: 5,000 nodes and 150,000 pods, 30 a node (28 of
// Deployments, 2 of DaemonSets).
const (
	FullNodes   = 5000
	PodsPerNode = 30
	dsPerNode   = 2
	appPerNode  = PodsPerNode - dsPerNode
	// perDeployment is the replicas of each Deployment.
	perDeployment = 500
	// groupSize is the instances of one fleet (one RunInstances call,
	// one NodeClaim tag: identical NodeClaims launched together).
	groupSize = 50
)

// Size is a fraction of the design point.
type Size struct {
	Percent float64 `json:"percent"`
	Nodes   int     `json:"nodes"`
	Pods    int     `json:"pods"`
}

// SizeOf is the size at percent of the design point.
func SizeOf(percent float64) Size {
	n := int(math.Round(FullNodes * percent / 100))
	return Size{Percent: percent, Nodes: n, Pods: n * PodsPerNode}
}

// Name is the size as written, "2%".
func (s Size) Name() string { return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%" }

// ParseSizes reads "2,10,30,100" (percentages).
func ParseSizes(s string) ([]Size, error) {
	var out []Size
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSuffix(strings.TrimSpace(f), "%")
		if f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p <= 0 || p > 100 {
			return nil, fmt.Errorf("size %q: want a percentage in (0, 100]", f)
		}
		out = append(out, SizeOf(p))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no sizes in %q", s)
	}
	return out, nil
}

// CacheDir is where the snapshots live: $NODEWRIGHT_SCALE_CACHE, else
// ~/.cache/nodewright/scale.
func CacheDir() string {
	if d := os.Getenv("NODEWRIGHT_SCALE_CACHE"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "nodewright", "scale")
}

// snapshotDir is the snapshot of a size under the cache.
func snapshotDir(cache string, s Size) string {
	return filepath.Join(cache, fmt.Sprintf("v%d-%s", Version, strings.TrimSuffix(s.Name(), "%")+"pct"))
}
