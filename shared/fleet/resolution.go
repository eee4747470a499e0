package fleet

import (
	"context"
	"errors"

	"github.com/nodewright/nodewright/shared/apis"
)

// Why an EC2NodeClass resolved to nothing a launch can use. Resolve's
// errors wrap them (errors.Is), so that a caller tells a class that selects
// nothing in the account from one it could not look up this time.
var (
	ErrNoSubnet        = errors.New("spec.subnetSelectorTerms: no available subnet matches")
	ErrNoSecurityGroup = errors.New("spec.securityGroupSelectorTerms: no security group matches")
	ErrNoAMI           = errors.New("spec.amiSelectorTerms: no AMI matches")
)

// Resolution is one EC2NodeClass resolved against the account, or why it
// could not be.
type Resolution struct {
	// Name is the EC2NodeClass's name.
	Name string
	// Class is what it resolved to (nil when Err is set).
	Class *NodeClass
	// Err wraps ErrNoSubnet, ErrNoSecurityGroup or ErrNoAMI when the class
	// selects none, else is the lookup's failure.
	Err error
}

// ResolveAll resolves each class, in the order given, through the same
// cache as Resolve (a class that resolved is reused for CacheTTL; a failure
// is not kept, so the next call looks again).
func (l *Launcher) ResolveAll(ctx context.Context, classes []*apis.EC2NodeClass) []Resolution {
	out := make([]Resolution, 0, len(classes))
	for _, nc := range classes {
		r, err := l.Resolve(ctx, nc)
		out = append(out, Resolution{Name: nc.Name, Class: r, Err: err})
	}
	return out
}
