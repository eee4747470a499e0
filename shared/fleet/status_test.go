package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

type fakeStatus struct {
	statuses map[string]types.InstanceStatus
	calls    [][]string
}

func (f *fakeStatus) DescribeInstanceStatus(_ context.Context, in *ec2.DescribeInstanceStatusInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error) {
	f.calls = append(f.calls, in.InstanceIds)
	out := &ec2.DescribeInstanceStatusOutput{}
	for _, id := range in.InstanceIds {
		if s, ok := f.statuses[id]; ok {
			out.InstanceStatuses = append(out.InstanceStatuses, s)
		}
	}
	return out, nil
}

func summary(st types.SummaryStatus, since *time.Time) *types.InstanceStatusSummary {
	s := &types.InstanceStatusSummary{Status: st}
	if st == types.SummaryStatusImpaired {
		s.Details = []types.InstanceStatusDetails{{Name: types.StatusNameReachability, Status: types.StatusTypeFailed, ImpairedSince: since}}
	}
	return s
}

func TestStatusChecks(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	early, late := now.Add(-40*time.Minute), now.Add(-5*time.Minute)
	f := &fakeStatus{statuses: map[string]types.InstanceStatus{
		"i-ok":       {InstanceId: aws.String("i-ok"), InstanceStatus: summary(types.SummaryStatusOk, nil), SystemStatus: summary(types.SummaryStatusOk, nil)},
		"i-instance": {InstanceId: aws.String("i-instance"), InstanceStatus: summary(types.SummaryStatusImpaired, &late), SystemStatus: summary(types.SummaryStatusOk, nil)},
		"i-both":     {InstanceId: aws.String("i-both"), InstanceStatus: summary(types.SummaryStatusImpaired, &late), SystemStatus: summary(types.SummaryStatusImpaired, &early)},
		"i-nosince":  {InstanceId: aws.String("i-nosince"), SystemStatus: &types.InstanceStatusSummary{Status: types.SummaryStatusImpaired}},
		"i-init":     {InstanceId: aws.String("i-init"), InstanceStatus: summary(types.SummaryStatusInitializing, nil)},
	}}
	ids := []string{"i-ok", "i-instance", "i-both", "i-nosince", "i-init", "i-ok"}
	for i := 0; i < 150; i++ {
		ids = append(ids, "i-gone"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	got, err := StatusChecks(context.Background(), f, ids, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 || len(f.calls[0]) != 100 {
		t.Errorf("calls of %d IDs, want 2 calls, the first of 100", len(f.calls))
	}
	want := map[string]Impairment{
		"i-instance": {Since: late, Detail: "instance reachability: failed"},
		"i-both":     {Since: early, Detail: "instance reachability: failed, system reachability: failed"},
		"i-nosince":  {Since: now, Detail: "system check impaired"},
	}
	if len(got) != len(want) {
		t.Errorf("impaired %v, want %v", got, want)
	}
	for id, w := range want {
		if g := got[id]; !g.Since.Equal(w.Since) || g.Detail != w.Detail {
			t.Errorf("%s: %+v, want %+v", id, g, w)
		}
	}
}
