// Package cloudfault is the local cloud's faults as scenarios name them
// (an interrupt step's kind): what happens to one instance, and how AWS
// tells Nodewright about it. Each fault is one file holding one Fault;
// registry lists them all. The scenario parser accepts exactly the
// registered names and the player injects them through Inject, so adding
// a fault is one new file plus one line in registry.
package cloudfault

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// registry is every fault, in the order errors list them.
var registry = []Fault{
	spot{},
	rebalance{},
	scheduledChange{},
	stateChange{},
	capacityReservation{},
}

// Fault is one fault the local cloud injects into an instance.
type Fault interface {
	// Name is the fault as a scenario spells it (interrupt: {kind: ...}).
	Name() string
	// Inject delivers the fault to the instance now; notice is the time
	// between the warning and the instance's end, for faults that end it.
	Inject(ctx context.Context, c Cloud, instanceID string, notice time.Duration) error
}

// Cloud is what faults need of the local cloud's AWS front
// (*awsfront.Front implements it).
type Cloud interface {
	// SendEvent sends the EventBridge event of a sample of package events
	// about the instance to the interruption queue, detail's fields set
	// over the sample's; it fails when the instance does not exist.
	SendEvent(ctx context.Context, sample, instanceID string, detail map[string]any) error
	// InstanceZone is the instance's availability zone.
	InstanceZone(ctx context.Context, instanceID string) (string, error)
	// After runs fn after d unless the cloud is closed first.
	After(d time.Duration, what string, fn func(context.Context) error)
	// Terminate and Stop end the instance and send the state-change
	// notifications.
	Terminate(ctx context.Context, instanceID string) error
	Stop(ctx context.Context, instanceID string) error
	// Now is the cloud's clock; Region its region.
	Now() time.Time
	Region() string
}

// Names lists every registered fault's name, in registry order.
func Names() []string {
	out := make([]string, len(registry))
	for i, f := range registry {
		out[i] = f.Name()
	}
	return out
}

// Lookup returns the fault named name; the error names it and lists the
// known ones.
func Lookup(name string) (Fault, error) {
	for _, f := range registry {
		if f.Name() == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown fault %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Inject delivers the fault named name to the instance.
func Inject(ctx context.Context, c Cloud, name, instanceID string, notice time.Duration) error {
	f, err := Lookup(name)
	if err != nil {
		return err
	}
	if err := f.Inject(ctx, c, instanceID, notice); err != nil {
		return fmt.Errorf("%s on %s: %w", name, instanceID, err)
	}
	return nil
}
