package provision

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/refdata"
)

// fakeCluster serves canned objects.
type fakeCluster struct {
	pods  []corev1.Pod
	nodes []corev1.Node
	err   error
}

func (f *fakeCluster) Pods(context.Context) ([]corev1.Pod, error)   { return f.pods, f.err }
func (f *fakeCluster) Nodes(context.Context) ([]corev1.Node, error) { return f.nodes, nil }
func (f *fakeCluster) DaemonSets(context.Context) ([]appsv1.DaemonSet, error) {
	return nil, nil
}

// fakeLauncher launches the first type in the first zone, fails claims of
// failPool, and counts how many launches run at once.
type fakeLauncher struct {
	zones    []string
	zonesErr error
	failPool string

	mu        sync.Mutex
	reqs      []fleet.Request
	running   atomic.Int32
	maxAtOnce atomic.Int32
}

func (f *fakeLauncher) Zones(context.Context, []*apis.EC2NodeClass) ([]string, error) {
	return f.zones, f.zonesErr
}

func (f *fakeLauncher) Launch(_ context.Context, req fleet.Request) (*fleet.Instance, error) {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.maxAtOnce.Load()
		if n <= m || f.maxAtOnce.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if req.Claim.NodePool == f.failPool {
		return nil, fmt.Errorf("launch nodeclaim %s: %w", req.Name, &fleet.LaunchError{
			Unavailable: []fleet.UnavailableOffering{{InstanceType: req.Claim.InstanceTypes[0], Zone: req.Claim.Zones[0], CapacityType: "spot", Code: "InsufficientInstanceCapacity"}},
			Errors:      []fleet.FleetError{{Code: "InsufficientInstanceCapacity"}},
		})
	}
	return &fleet.Instance{NodeClaim: req.Name, NodePool: req.Claim.NodePool, InstanceID: "i-" + req.Name, InstanceType: req.Claim.InstanceTypes[0],
		Zone: req.Claim.Zones[0], CapacityType: req.Claim.CapacityType, PricePerHour: req.Claim.PricePerHour}, nil
}

// spot is the deterministic price model with a Refresh that may fail.
type spot struct {
	pricing.Model
	err error
}

func (s spot) Refresh(context.Context) error { return s.err }

func examplePools(t *testing.T) ([]*apis.NodePool, []*apis.EC2NodeClass) {
	t.Helper()
	var paths []string
	for _, f := range []string{"nodepool-default.yaml", "ec2nodeclass-default.yaml"} {
		p, err := refdata.Example(f)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cfg, err := apis.LoadFiles(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.NodePools, cfg.NodeClasses
}

// pendingPods are n unschedulable pods of cpu each.
func pendingPods(n int, cpu string) []corev1.Pod {
	var out []corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("inflate-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
		})
	}
	return out
}

// fakeClock advances a second per reading.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

func config(t *testing.T, cl *fakeCluster, l *fakeLauncher) Config {
	pools, classes := examplePools(t)
	n := 0
	var mu sync.Mutex
	return Config{
		Cluster: cl, Launcher: l, NodePools: pools, NodeClasses: classes, Catalog: catalog.Default(),
		Spot: spot{Model: pricing.Model{Catalog: catalog.Default()}},
		Names: func(pool string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("%s-%05d", pool, n), nil
		},
		Now: (&fakeClock{}).Now,
	}
}

func TestRunLaunchesThePlan(t *testing.T) {
	cl := &fakeCluster{pods: pendingPods(40, "1")}
	l := &fakeLauncher{zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}}
	cfg := config(t, cl, l)
	cfg.Parallelism = 2
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pending != 40 || len(rep.Plan.NodeClaims) == 0 || len(rep.Launches) != len(rep.Plan.NodeClaims) {
		t.Fatalf("pending %d, claims %d, launches %d", rep.Pending, len(rep.Plan.NodeClaims), len(rep.Launches))
	}
	placed := 0
	for i, ln := range rep.Launches {
		if ln.Err != nil || ln.Instance == nil || !reflect.DeepEqual(ln.Claim, rep.Plan.NodeClaims[i]) {
			t.Errorf("launch %d: %+v", i, ln)
		}
		placed += len(ln.Claim.Pods)
	}
	if placed != 40 {
		t.Errorf("%d pods on launched claims, want 40", placed)
	}
	for _, req := range l.reqs {
		if req.NodeClass == nil || req.NodeClass.Name != "default" || !strings.HasPrefix(req.Name, "default-") {
			t.Errorf("request %s with node class %v", req.Name, req.NodeClass)
		}
	}
	if m := l.maxAtOnce.Load(); m > 2 {
		t.Errorf("%d launches at once, parallelism 2", m)
	}
	if rep.Read != time.Second || rep.Solve != time.Second || rep.Launch != time.Second {
		t.Errorf("timings %v %v %v: want a clock reading each", rep.Read, rep.Solve, rep.Launch)
	}
	if got, want := rep.PricePerHour(), rep.Plan.PricePerHour; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("launched price %v, planned %v", got, want)
	}
	if len(rep.Launched()) != len(rep.Launches) || len(rep.Failed()) != 0 {
		t.Errorf("launched %d, failed %d", len(rep.Launched()), len(rep.Failed()))
	}
}

func TestRunReportsFailedLaunches(t *testing.T) {
	cl := &fakeCluster{pods: pendingPods(3, "1")}
	l := &fakeLauncher{zones: []string{"us-east-1a"}, failPool: "default"}
	rep, err := Run(context.Background(), config(t, cl, l))
	if err != nil {
		t.Fatal(err)
	}
	failed := rep.Failed()
	if len(failed) == 0 || len(failed) != len(rep.Launches) {
		t.Fatalf("failed %d of %d", len(failed), len(rep.Launches))
	}
	f := failed[0]
	if !errors.Is(f.Err, fleet.ErrUnavailableOffering) || len(f.Refused) != 1 || !strings.Contains(f.Error, "launch nodeclaim default-") {
		t.Errorf("failure %+v", f)
	}
}

func TestRunDegradesAndFails(t *testing.T) {
	tests := []struct {
		name        string
		edit        func(*Config, *fakeCluster, *fakeLauncher)
		wantErr     string
		wantWarning string
		check       func(*testing.T, *Report)
	}{
		{
			name:    "cluster unreadable",
			edit:    func(_ *Config, c *fakeCluster, _ *fakeLauncher) { c.err = errors.New("forbidden") },
			wantErr: "read cluster: forbidden",
		},
		{
			name:    "no zone resolves",
			edit:    func(_ *Config, _ *fakeCluster, l *fakeLauncher) { l.zones, l.zonesErr = nil, errors.New("no subnet") },
			wantErr: "read node classes: no subnet",
		},
		{
			name: "one node class unresolved",
			edit: func(_ *Config, _ *fakeCluster, l *fakeLauncher) {
				l.zonesErr = errors.New("resolve EC2NodeClass other: no subnet")
			},
			wantWarning: "resolve EC2NodeClass other",
		},
		{
			name: "spot prices unreadable",
			edit: func(c *Config, _ *fakeCluster, _ *fakeLauncher) {
				c.Spot = spot{Model: pricing.Model{Catalog: catalog.Default()}, err: errors.New("throttled")}
			},
			wantWarning: "spot prices: throttled (planning on-demand only)",
			check: func(t *testing.T, r *Report) {
				for _, c := range r.Plan.NodeClaims {
					if !reflect.DeepEqual(c.CapacityTypes, []string{"on-demand"}) {
						t.Errorf("claim capacity types %v without spot prices", c.CapacityTypes)
					}
				}
			},
		},
		{
			name: "node class not configured",
			edit: func(c *Config, _ *fakeCluster, _ *fakeLauncher) { c.NodeClasses = nil },
			check: func(t *testing.T, r *Report) {
				if len(r.Failed()) == 0 || !strings.Contains(r.Failed()[0].Error, `EC2NodeClass "default" is not configured`) {
					t.Errorf("failures %+v", r.Failed())
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &fakeCluster{pods: pendingPods(2, "1")}
			l := &fakeLauncher{zones: []string{"us-east-1a"}}
			cfg := config(t, cl, l)
			tt.edit(&cfg, cl, l)
			rep, err := Run(context.Background(), cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantWarning != "" && !strings.Contains(strings.Join(rep.Warnings, "\n"), tt.wantWarning) {
				t.Errorf("warnings %q, want %q", rep.Warnings, tt.wantWarning)
			}
			if tt.check != nil {
				tt.check(t, rep)
			}
		})
	}
}
