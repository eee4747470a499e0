package setup

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/drain"
)

// TestDrainResultCarriesDeleteBy: the terminator sees the drain's account
// whole, with the moment a pod a budget holds must be deleted to keep its
// grace (DeleteBy), so the callers that loop come back by then.
func TestDrainResultCarriesDeleteBy(t *testing.T) {
	by := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	pod := func(name string) drain.Outcome {
		return drain.Outcome{Pod: drain.Pod{Namespace: "default", Name: name}}
	}
	got := drainResult(&drain.Result{Evicted: []drain.Outcome{pod("a")}, Deleted: []drain.Outcome{pod("b")}, Blocked: []drain.Outcome{pod("c")},
		Terminating: []drain.Outcome{pod("d")}, DeleteBy: by})
	if got.Done || !slices.Equal(got.Evicted, []string{"default/a"}) || !slices.Equal(got.Deleted, []string{"default/b"}) ||
		!slices.Equal(got.Blocked, []string{"default/c"}) || !slices.Equal(got.Remaining, []string{"default/c", "default/d"}) || !got.DeleteBy.Equal(by) {
		t.Errorf("drain result %+v: want a, b, c as evicted, deleted, blocked, c and d remaining, DeleteBy %s", got, by)
	}
}

// TestDrainResultNamesPodsForEvents: the terminator's account carries the
// UIDs of the pods the drain acted on and why the Eviction API refused a
// pod (a budget, an error), but not pods held otherwise (do-not-disrupt).
func TestDrainResultNamesPodsForEvents(t *testing.T) {
	pod := func(name, reason string) drain.Outcome {
		return drain.Outcome{Pod: drain.Pod{Namespace: "default", Name: name}, Reason: reason, UID: types.UID("u-" + name)}
	}
	got := drainResult(&drain.Result{Evicted: []drain.Outcome{pod("a", drain.ReasonEvicted)},
		Blocked: []drain.Outcome{pod("b", drain.ReasonPDB), pod("c", drain.ReasonDoNotDisrupt)}})
	if got.UIDs["default/a"] != "u-a" || got.UIDs["default/b"] != "u-b" {
		t.Errorf("UIDs %v: want a's and b's", got.UIDs)
	}
	if _, ok := got.Why["default/b"]; !ok || len(got.Why) != 1 {
		t.Errorf("why %v: want b's budget alone", got.Why)
	}
}
