package fleet

import (
	"context"
	"errors"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
)

// ResolveAll answers each class in order: whole, or with an error that
// wraps the typed reason when the class selects nothing; a failure is not
// kept, so the class resolves once the account has what it selects.
func TestResolveAllTellsWhatAClassLacks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		breaks func(f *fixture)
		want   error // nil: resolves
	}{
		{name: "whole", breaks: func(*fixture) {}},
		{name: "no subnet", breaks: func(f *fixture) { f.ec2.subnets = nil }, want: ErrNoSubnet},
		{name: "no security group", breaks: func(f *fixture) { f.ec2.groups = nil }, want: ErrNoSecurityGroup},
		{name: "no AMI parameter", breaks: func(f *fixture) { f.ssm.params = map[string]string{} }, want: ErrNoAMI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			subnets, groups := f.ec2.subnets, f.ec2.groups
			params := f.ssm.params
			tc.breaks(f)
			other := defaultNodeClass()
			other.Name = "other"
			got := f.l.ResolveAll(context.Background(), []*apis.EC2NodeClass{defaultNodeClass(), other})
			if len(got) != 2 || got[0].Name != "default" || got[1].Name != "other" {
				t.Fatalf("resolutions %+v: want default then other", got)
			}
			for _, r := range got {
				if tc.want == nil {
					if r.Err != nil || r.Class == nil || len(r.Class.Subnets) == 0 {
						t.Errorf("%s: %+v, %v: want it whole", r.Name, r.Class, r.Err)
					}
					continue
				}
				if !errors.Is(r.Err, tc.want) || r.Class != nil {
					t.Errorf("%s: class %+v, error %v: want %v", r.Name, r.Class, r.Err, tc.want)
				}
			}
			if tc.want == nil {
				return
			}
			// Fixed in the account: the next call resolves it.
			f.ec2.subnets, f.ec2.groups, f.ssm.params = subnets, groups, params
			again := f.l.ResolveAll(context.Background(), []*apis.EC2NodeClass{defaultNodeClass()})
			if again[0].Err != nil || again[0].Class == nil {
				t.Errorf("after the fix: %+v: want it whole (a failure is not cached)", again[0])
			}
		})
	}
}
