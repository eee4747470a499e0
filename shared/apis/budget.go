package apis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Unlimited is what AllowedDisruptions returns when no active budget limits a
// reason (Karpenter uses the same value).
const Unlimited = math.MaxInt32

// scheduleDescriptors are the @-names a budget schedule may use.
func scheduleDescriptors() []string {
	return []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
}

// parseSchedule parses a budget's cron schedule the way Karpenter does: five
// standard fields (minute hour day-of-month month day-of-week) or a
// descriptor, always in UTC (time zones are not supported).
func parseSchedule(s string) (cron.Schedule, error) {
	fields := strings.Fields(s)
	switch {
	case len(fields) == 1 && slices.Contains(scheduleDescriptors(), fields[0]):
	case len(fields) == 5 && !strings.Contains(s, "TZ="):
	default:
		return nil, errors.New("want 5 fields (minute hour day-of-month month day-of-week) or one of " +
			strings.Join(scheduleDescriptors(), ", ") + "; time zones are not supported")
	}
	return cron.ParseStandard("TZ=UTC " + strings.Join(fields, " "))
}

// parseBudgetNodes reads a budget's nodes: a count ("5") or a percentage
// ("10%"). It returns the count, or -percent for a percentage.
func parseBudgetNodes(nodes string) (int, error) {
	if p, ok := strings.CutSuffix(nodes, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 100 {
			return 0, fmt.Errorf("nodes %q is not a percentage from 0%% to 100%%", nodes)
		}
		return -n, nil
	}
	n, err := strconv.Atoi(nodes)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("nodes %q is not a count or a percentage", nodes)
	}
	return n, nil
}

// IsActive reports whether the budget applies at now: always when it has no
// schedule, else from each schedule hit up to (not including) the hit plus
// duration, evaluated in UTC as Karpenter does.
func (b Budget) IsActive(now time.Time) (bool, error) {
	if b.Schedule == nil && b.Duration == nil {
		return true, nil
	}
	if b.Schedule == nil || b.Duration == nil {
		return false, errors.New("budget schedule and duration must be set together")
	}
	sched, err := parseSchedule(*b.Schedule)
	if err != nil {
		return false, fmt.Errorf("budget schedule %q: %w", *b.Schedule, err)
	}
	now = now.UTC()
	next := sched.Next(now.Add(-b.Duration.Duration))
	return !next.IsZero() && !next.After(now), nil
}

// AllowedDisruptions returns how many of a NodePool's numNodes nodes this
// budget lets be disrupted at once at now: Unlimited when the budget is not
// active, else its count, or its percentage of numNodes rounded up (nodes
// left empty count as the default, 10%). A budget that cannot be read returns
// 0 and an error (fail closed).
func (b Budget) AllowedDisruptions(now time.Time, numNodes int) (int, error) {
	active, err := b.IsActive(now)
	if err != nil {
		return 0, err
	}
	if !active {
		return Unlimited, nil
	}
	nodes := b.Nodes
	if nodes == "" {
		nodes = DefaultBudgetNodes
	}
	n, err := parseBudgetNodes(nodes)
	if err != nil {
		return 0, err
	}
	if n >= 0 {
		return n, nil
	}
	if numNodes <= 0 {
		return 0, nil
	}
	pct := int64(-n)
	return int((pct*int64(numNodes) + 99) / 100), nil
}

// AllowedDisruptions returns how many of the pool's numNodes nodes may be
// disrupted at once for reason at now: the most restrictive of the active
// budgets that apply to the reason (a budget without reasons applies to all),
// Unlimited when none does. Budgets left unset count as Karpenter's default
// (10%). Any budget that cannot be read makes the answer 0 (fail closed).
// Callers subtract the nodes already being disrupted.
func (np *NodePool) AllowedDisruptions(now time.Time, numNodes int, reason DisruptionReason) (int, error) {
	if !slices.Contains(DisruptionReasons(), reason) {
		return 0, fmt.Errorf("nodepool %s: unknown disruption reason %q", np.Name, reason)
	}
	budgets := np.Spec.Disruption.Budgets
	if budgets == nil {
		budgets = []Budget{{Nodes: DefaultBudgetNodes}}
	}
	allowed := Unlimited
	var errs []error
	for i, b := range budgets {
		if len(b.Reasons) > 0 && !slices.Contains(b.Reasons, reason) {
			continue
		}
		n, err := b.AllowedDisruptions(now, numNodes)
		if err != nil {
			errs = append(errs, fmt.Errorf("nodepool %s: budgets[%d]: %w", np.Name, i, err))
			continue
		}
		allowed = min(allowed, n)
	}
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	return allowed, nil
}
