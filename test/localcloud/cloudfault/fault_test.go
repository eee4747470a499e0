package cloudfault

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/events"
)

// recorder is a Cloud that records what a fault does, running After's
// actions at once.
type recorder struct {
	calls []string
}

func (r *recorder) SendEvent(_ context.Context, sample, id string, detail map[string]any) error {
	if id == "i-missing" {
		return fmt.Errorf("instance %s not found", id)
	}
	keys := []string{}
	for k := range detail {
		keys = append(keys, k)
	}
	r.calls = append(r.calls, fmt.Sprintf("event %s %s %d", sample, id, len(keys)))
	return nil
}

func (r *recorder) InstanceZone(context.Context, string) (string, error) { return "us-west-2d", nil }

func (r *recorder) After(d time.Duration, what string, fn func(context.Context) error) {
	r.calls = append(r.calls, fmt.Sprintf("after %s: %s", d, what))
	if err := fn(context.Background()); err != nil {
		r.calls = append(r.calls, "error "+err.Error())
	}
}

func (r *recorder) Terminate(_ context.Context, id string) error {
	r.calls = append(r.calls, "terminate "+id)
	return nil
}

func (r *recorder) Stop(_ context.Context, id string) error {
	r.calls = append(r.calls, "stop "+id)
	return nil
}

func (r *recorder) Now() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
func (r *recorder) Region() string { return "us-west-2" }

func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{Spot, []string{"event " + events.SpotInterruptionWarning + " i-1 1", "after 2m0s: spot i-1", "terminate i-1"}},
		{Rebalance, []string{"event " + events.RebalanceRecommendation + " i-1 0"}},
		{ScheduledChange, []string{"event " + events.HealthScheduledChange + " i-1 7", "after 2m0s: scheduled-change i-1", "stop i-1"}},
		{StateChange, []string{"terminate i-1"}},
		{CapacityReservation, []string{"event " + events.CapacityReservationInterrupted + " i-1 3", "after 2m0s: capacity-reservation i-1", "terminate i-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			if err := Inject(context.Background(), r, tc.name, "i-1", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.calls, "; "); got != strings.Join(tc.want, "; ") {
				t.Errorf("calls\n  %s\nwant\n  %s", got, strings.Join(tc.want, "; "))
			}
		})
	}
}

// Every registered fault has a case above, and names are unique.
func TestRegistry(t *testing.T) {
	want := []string{Spot, Rebalance, ScheduledChange, StateChange, CapacityReservation}
	if got := strings.Join(Names(), ","); got != strings.Join(want, ",") {
		t.Errorf("registry %s, want %s", got, strings.Join(want, ","))
	}
}

func TestUnknownFault(t *testing.T) {
	err := Inject(context.Background(), &recorder{}, "meteor", "i-1", 0)
	want := `unknown fault "meteor" (known: spot, rebalance, scheduled-change, state-change, capacity-reservation)`
	if err == nil || err.Error() != want {
		t.Errorf("err %v, want %s", err, want)
	}
}

func TestMissingInstance(t *testing.T) {
	err := Inject(context.Background(), &recorder{}, Spot, "i-missing", 0)
	if err == nil || !strings.Contains(err.Error(), "spot on i-missing: instance i-missing not found") {
		t.Errorf("err %v", err)
	}
}

func TestZoneID(t *testing.T) {
	for zone, want := range map[string]string{"us-west-2d": "usw2-az4", "us-east-1a": "use1-az1", "x": ""} {
		if got := zoneID(zone); got != want {
			t.Errorf("zoneID(%q) = %q, want %q", zone, got, want)
		}
	}
}
