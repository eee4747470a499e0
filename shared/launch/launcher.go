package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// Fleet resolves, launches and ends instances (*fleet.Launcher).
type Fleet interface {
	// Prepare resolves a request into its fleet's plan (stored in the
	// records before LaunchPlan calls CreateFleet with it).
	Prepare(ctx context.Context, req fleet.Request) (*fleet.Plan, error)
	LaunchPlan(ctx context.Context, p *fleet.Plan) ([]*fleet.Instance, error)
	TagNodeClaim(ctx context.Context, instanceID, nodePool, nodeClaim string) error
	Instances(ctx context.Context) ([]fleet.Running, error)
	Terminate(ctx context.Context, ids []string) error
}

// Store is the part of the state table launches write (*state.Store).
type Store interface {
	CreateNodeClaims(ctx context.Context, lease *state.Lease, claims []*state.NodeClaim, v *state.Versions) error
	PutNodeClaim(ctx context.Context, nc *state.NodeClaim) error
	DeleteNodeClaim(ctx context.Context, nc *state.NodeClaim) error
	MarkUnavailable(ctx context.Context, offs []state.Offering, ttl time.Duration) error
}

// Metrics emits CloudWatch metrics (*metrics.Emitter).
type Metrics interface {
	Emit(name string, value float64, dims metrics.Dims) error
}

// Launcher launches planned NodeClaims for one cluster.
type Launcher struct {
	Cluster string
	Store   Store
	Fleet   Fleet
	Catalog *catalog.Catalog
	// Spot prices spot instances adopted from a tag search (nil: 0).
	Spot    catalog.SpotPricer
	Metrics Metrics
	Log     *slog.Logger
	Now     func() time.Time
	// Names names new NodeClaims (fleet.NodeClaimName); Nonce draws a
	// launch's random nonce (default: 16 bytes of crypto/rand).
	Names func(nodePool string) (string, error)
	Nonce func() (string, error)
	// Parallelism is how many fleets a launch calls at once.
	Parallelism int
	// Timeout: a launch without an instance this long after its records
	// were written is given up (the registration timeout).
	Timeout time.Duration
	// RedriveAfter: a record still launching this long after it was
	// written belongs to an invocation that died.
	RedriveAfter time.Duration
	// OnLaunched, when set, is told of each NodeClaim launched or adopted
	// (the caller's Kubernetes event).
	OnLaunched func(ctx context.Context, rec *state.NodeClaim)
	// AfterCreateFleet, when set, is called after CreateFleet answered and
	// before the records are updated: an error stands for the process
	// dying there (no record is updated and the launch fails), the fault
	// tests inject.
	AfterCreateFleet func(token string) error
	// Wait sleeps d (nil: a timer); Jitter draws a duration in [0, n)
	// (nil: math/rand).
	Wait   func(ctx context.Context, d time.Duration) error
	Jitter func(n int64) int64
	// Parallel runs fns at once and returns when all have returned (nil:
	// a goroutine each, Parallelism at a time). The fault suite
	// (test/faults) runs them one after another, in order, so that a seed
	// replays exactly.
	Parallel func(fns ...func())
}

func (l *Launcher) check() error {
	if l.Store == nil || l.Fleet == nil || l.Catalog == nil || l.Names == nil {
		return errors.New("launch: a launcher needs Store, Fleet, Catalog and Names")
	}
	if l.Nonce == nil {
		l.Nonce = RandomNonce
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	if l.Log == nil {
		l.Log = slog.New(slog.DiscardHandler)
	}
	if l.Metrics == nil {
		l.Metrics = metrics.Discard{}
	}
	if l.Parallelism <= 0 {
		l.Parallelism = 1
	}
	return nil
}

// RandomNonce is 16 random bytes in hex.
func RandomNonce() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Launch is one NodeClaim a launch launched (or failed to).
type Launch struct {
	NodeClaim string               `json:"nodeClaim"`
	Claim     scheduling.NodeClaim `json:"claim"`
	Instance  *fleet.Instance      `json:"instance,omitempty"`
	Error     string               `json:"error,omitempty"`
	// FleetCalls is 1 for the first NodeClaim of each CreateFleet call.
	FleetCall bool `json:"fleetCall,omitempty"`
	// InsufficientCapacity: the launch failed because EC2 refused its offerings.
	InsufficientCapacity bool `json:"insufficientCapacity,omitempty"`
}

// Input is what one launch launches, and what it was decided from.
type Input struct {
	// Plan's NodeClaims are launched, identical ones by one fleet.
	Plan *scheduling.Result
	// Reason is why (the records' Reason).
	Reason  string
	Pools   []*apis.NodePool
	Classes []*apis.EC2NodeClass
	// Records are the records the plan was decided from (they count
	// against the pools' limits); Versions the launch versions read
	// before them, advanced when the launch's records are written.
	Records  []*state.NodeClaim
	Versions *state.Versions
	// Exclude are offerings no fleet may use (refused recently, or being
	// reclaimed): left out of the fleets' overrides.
	Exclude []state.Offering
}

// Result is what one launch did.
type Result struct {
	// Launched are the records now launched; Launches every NodeClaim's
	// outcome; Refused the offerings EC2 refused (marked unavailable);
	// Short counts the NodeClaims partial fleets left without an instance
	// (their records are removed: the caller solves again for their pods).
	Launched []*state.NodeClaim
	Launches []Launch
	Refused  []state.Offering
	Short    int
}
