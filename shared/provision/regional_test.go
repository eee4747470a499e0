package provision

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/metrics"
)

// fakeRegional is a RegionalCatalog: a fixed catalog and warning, counting
// refreshes.
type fakeRegional struct {
	cat       *catalog.Catalog
	warning   string
	refreshes int
}

func (f *fakeRegional) Catalog() *catalog.Catalog { return f.cat }
func (f *fakeRegional) Warning() string           { return f.warning }
func (f *fakeRegional) Refresh(context.Context)   { f.refreshes++ }

// A round plans with the region's catalog: no type is offered in a zone
// that lacks it, and stand-in prices are said in the warnings and the
// OnDemandPricesMissing metric. A sweep starts the refresh.
func TestRoundUsesTheRegionalCatalog(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	var pods []*corev1.Pod
	for i := range 6 {
		pods = append(pods, unschedulableAt("web-"+string(rune('a'+i)), t0.Add(-time.Minute), t0.Add(-time.Minute)))
	}
	r, _, m, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
	// Every type exists in us-east-1b only.
	zones := map[string][]string{}
	for _, it := range cat.Types() {
		zones[it.Name] = []string{"us-east-1b"}
	}
	reg := &fakeRegional{cat: cat.Regional(nil, zones), warning: "on-demand prices: no figures read yet for us-east-1"}
	r.Regional = reg
	rep, err := r.Round(context.Background(), testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan == nil || len(rep.Plan.NodeClaims) == 0 {
		t.Fatal("no NodeClaim planned")
	}
	for _, c := range rep.Plan.NodeClaims {
		if !slices.Equal(c.Zones, []string{"us-east-1b"}) {
			t.Errorf("NodeClaim in zones %v: want only us-east-1b, the one zone that has its types", c.Zones)
		}
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "no figures read yet") }) {
		t.Errorf("warnings %q: want the stand-in prices said", rep.Warnings)
	}
	if v := m.Values(metrics.OnDemandPricesMissing); !slices.Equal(v, []float64{1}) {
		t.Errorf("%s %v, want [1]", metrics.OnDemandPricesMissing, v)
	}
	reg.warning = ""
	if _, err := r.Round(context.Background(), testLease(clock)); err != nil {
		t.Fatal(err)
	}
	if v := m.Values(metrics.OnDemandPricesMissing); !slices.Equal(v, []float64{1, 0}) {
		t.Errorf("%s %v, want [1 0]", metrics.OnDemandPricesMissing, v)
	}
	if _, err := r.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reg.refreshes != 1 {
		t.Errorf("%d refreshes after a sweep, want 1", reg.refreshes)
	}
}
