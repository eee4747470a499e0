package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// StatusAPI is the EC2 call that reads instances' status checks (node
// repair's EC2 status check). It is apart from EC2API: a client without it
// is not polled.
type StatusAPI interface {
	DescribeInstanceStatus(context.Context, *ec2.DescribeInstanceStatusInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
}

// Impairment is a failing status check of an instance.
type Impairment struct {
	// Since is when the check first failed (EC2's ImpairedSince; the time
	// of the read when EC2 gives none).
	Since time.Time
	// Detail names the failing checks ("system reachability: failed").
	Detail string
}

// statusBatch is DescribeInstanceStatus's most instance IDs per call.
const statusBatch = 100

// StatusChecks reads the status checks of instances (running ones; others
// have none) and returns those whose instance or system check is impaired,
// by instance ID. A client that cannot make the call polls nothing (nil).
func (l *Launcher) StatusChecks(ctx context.Context, ids []string) (map[string]Impairment, error) {
	api, ok := l.cfg.EC2.(StatusAPI)
	if !ok {
		return nil, nil
	}
	return StatusChecks(ctx, api, ids, l.cfg.Now)
}

// StatusChecks is Launcher.StatusChecks over api, now the clock.
func StatusChecks(ctx context.Context, api StatusAPI, ids []string, now func() time.Time) (map[string]Impairment, error) {
	if now == nil {
		now = time.Now
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	out := map[string]Impairment{}
	for start := 0; start < len(ids); start += statusBatch {
		in := &ec2.DescribeInstanceStatusInput{InstanceIds: ids[start:min(start+statusBatch, len(ids))]}
		for {
			page, err := api.DescribeInstanceStatus(ctx, in)
			if err != nil {
				return nil, fmt.Errorf("describe instance status: %w", err)
			}
			for _, s := range page.InstanceStatuses {
				if imp, bad := impairment(s, now()); bad {
					out[aws.ToString(s.InstanceId)] = imp
				}
			}
			if aws.ToString(page.NextToken) == "" {
				break
			}
			in.NextToken = page.NextToken
		}
	}
	return out, nil
}

// impairment reads one instance's status: impaired when its instance or
// system summary is, since the earliest ImpairedSince of its failing
// details.
func impairment(s types.InstanceStatus, now time.Time) (Impairment, bool) {
	var since time.Time
	var details []string
	for _, sum := range []struct {
		name string
		s    *types.InstanceStatusSummary
	}{{"instance", s.InstanceStatus}, {"system", s.SystemStatus}} {
		if sum.s == nil || sum.s.Status != types.SummaryStatusImpaired {
			continue
		}
		found := false
		for _, d := range sum.s.Details {
			if d.Status != types.StatusTypeFailed {
				continue
			}
			found = true
			details = append(details, fmt.Sprintf("%s %s: %s", sum.name, d.Name, d.Status))
			if t := aws.ToTime(d.ImpairedSince); !t.IsZero() && (since.IsZero() || t.Before(since)) {
				since = t
			}
		}
		if !found {
			details = append(details, sum.name+" check impaired")
		}
	}
	if len(details) == 0 {
		return Impairment{}, false
	}
	if since.IsZero() {
		since = now
	}
	return Impairment{Since: since, Detail: strings.Join(details, ", ")}, true
}
