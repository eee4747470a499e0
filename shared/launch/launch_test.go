package launch

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

var cat = catalog.Default()

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: code + " (test)"}
}

// planFleet answers LaunchPlan with launch (call counts from 1).
type planFleet struct {
	mu     sync.Mutex
	launch func(p *fleet.Plan, call int) ([]*fleet.Instance, error)
	calls  []*fleet.Plan
}

func (f *planFleet) Prepare(context.Context, fleet.Request) (*fleet.Plan, error) {
	return nil, errors.New("not planned here")
}

func (f *planFleet) LaunchPlan(_ context.Context, p *fleet.Plan) ([]*fleet.Instance, error) {
	f.mu.Lock()
	f.calls = append(f.calls, p)
	call, launch := len(f.calls), f.launch
	f.mu.Unlock()
	return launch(p, call)
}

func (f *planFleet) Calls() []*fleet.Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*fleet.Plan(nil), f.calls...)
}

func (f *planFleet) TagNodeClaim(context.Context, string, string, string) error { return nil }
func (f *planFleet) Instances(context.Context) ([]fleet.Running, error)         { return nil, nil }
func (f *planFleet) Terminate(context.Context, []string) error                  { return nil }

// nopStore stores nothing.
type nopStore struct{}

func (nopStore) CreateNodeClaims(context.Context, *state.Lease, []*state.NodeClaim, *state.Versions) error {
	return nil
}
func (nopStore) PutNodeClaim(context.Context, *state.NodeClaim) error    { return nil }
func (nopStore) DeleteNodeClaim(context.Context, *state.NodeClaim) error { return nil }
func (nopStore) MarkUnavailable(context.Context, []state.Offering, time.Duration) error {
	return nil
}

func testLauncher(clock *testingclock.FakeClock) (*Launcher, *planFleet) {
	fl := &planFleet{}
	return &Launcher{Cluster: "test-cluster", Store: nopStore{}, Fleet: fl, Catalog: cat, Now: clock.Now,
		Names: func(pool string) (string, error) { return pool + "-abcde", nil }}, fl
}

// CreateFleet's throttling: retried with the same ClientToken, with
// exponential backoff (200 ms doubling) and full jitter (a wait drawn from
// [0, backoff)), at most six calls; other errors are not retried.
func TestCreateFleetRetriesThrottling(t *testing.T) {
	ok := func(p *fleet.Plan) ([]*fleet.Instance, error) {
		return []*fleet.Instance{{NodeClaim: p.NodeClaim, InstanceID: "i-1"}}, nil
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		errs      []error // the calls' errors before one succeeds
		wantCalls int
		wantDraws []time.Duration // the backoff each wait was drawn under
		wantErr   string          // "": success
	}{
		{name: "no throttling", wantCalls: 1},
		{name: "throttled twice", errs: []error{apiError("RequestLimitExceeded"), apiError("Throttling")}, wantCalls: 3,
			wantDraws: []time.Duration{200 * ms, 400 * ms}},
		{name: "throttled throughout", errs: slices.Repeat([]error{apiError("RequestLimitExceeded")}, 10), wantCalls: 6,
			wantDraws: []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms}, wantErr: "RequestLimitExceeded"},
		{name: "another error is not retried", errs: []error{apiError("InvalidParameterValue")}, wantCalls: 1, wantErr: "InvalidParameterValue"},
		{name: "a capacity error is not retried", errs: []error{apiError("InsufficientInstanceCapacity")}, wantCalls: 1, wantErr: "InsufficientInstanceCapacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			r, fl := testLauncher(clock)
			fl.launch = func(p *fleet.Plan, call int) ([]*fleet.Instance, error) {
				if call <= len(tc.errs) {
					return nil, tc.errs[call-1]
				}
				return ok(p)
			}
			var draws, waits []time.Duration
			r.Jitter = func(n int64) int64 {
				draws = append(draws, time.Duration(n))
				return n - 1 // the longest wait the backoff allows
			}
			r.Wait = func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				clock.Step(d)
				return nil
			}
			if err := r.check(); err != nil {
				t.Fatal(err)
			}
			insts, err := r.createFleet(context.Background(), &fleet.Plan{Token: "default-abcde", NodeClaim: "default-abcde", NodePool: "default", Count: 2})
			calls := fl.Calls()
			if len(calls) != tc.wantCalls {
				t.Errorf("%d calls, want %d", len(calls), tc.wantCalls)
			}
			for _, c := range calls {
				if c.Token != "default-abcde" || c.Count != 2 {
					t.Errorf("call %+v: want ClientToken default-abcde and count 2 on every try", c)
				}
			}
			if !slices.Equal(draws, tc.wantDraws) {
				t.Errorf("waits drawn under %v, want %v", draws, tc.wantDraws)
			}
			for i, w := range waits {
				if w < 0 || w >= draws[i] {
					t.Errorf("wait %v outside [0, %v)", w, draws[i])
				}
			}
			if tc.wantErr == "" {
				if err != nil || len(insts) != 1 {
					t.Errorf("got %v, %v: want the instance", insts, err)
				}
				return
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != tc.wantErr {
				t.Errorf("error %v, want %s", err, tc.wantErr)
			}
		})
	}
}

// A throttled call whose invocation ends while it waits stops at once.
func TestCreateFleetStopsWaitingWhenTheContextEnds(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	r, fl := testLauncher(clock)
	fl.launch = func(*fleet.Plan, int) ([]*fleet.Instance, error) { return nil, apiError("RequestLimitExceeded") }
	ctx, cancel := context.WithCancel(context.Background())
	r.Wait = func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	_, err := r.createFleet(ctx, &fleet.Plan{Token: "default-abcde", Count: 1})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Errorf("error %v: want the cancellation, naming the throttling", err)
	}
	if n := len(fl.Calls()); n != 1 {
		t.Errorf("%d calls after the context ended, want 1", n)
	}
}

func TestGroups(t *testing.T) {
	c := func(pool string, types []string, pods ...string) scheduling.NodeClaim {
		return scheduling.NodeClaim{NodePool: pool, InstanceTypes: types, Pods: pods, Zones: []string{"us-east-1a"}}
	}
	claims := []scheduling.NodeClaim{
		c("a", []string{"m5.large"}, "p1"), c("a", []string{"m5.xlarge"}, "p2"), c("a", []string{"m5.large"}, "p3"),
		c("b", []string{"m5.large"}, "p4"), c("a", []string{"m5.large"}, "p5"),
	}
	got := Groups(claims)
	want := [][]int{{0, 2, 4}, {1}, {3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
}

func TestClaimCapacityIsTheLargestOption(t *testing.T) {
	c := scheduling.NodeClaim{InstanceTypes: []string{"m6g.large", "c6g.2xlarge", "r6g.xlarge"}}
	got := ClaimCapacity(c, cat, nil)
	if got.Cpu().Value() != 8 {
		t.Errorf("cpu %v, want 8 (c6g.2xlarge)", got.Cpu())
	}
	if got.Memory().Value() < 29<<30 {
		t.Errorf("memory %v, want r6g.xlarge's 32Gi less VM overhead", got.Memory())
	}
}
