// Package handover decides whether Nodewright may act on a cluster whose
// Karpenter controller may still be running.
//
// It exists because the two cannot share a cluster: Karpenter's garbage
// collector terminates, within about 30 seconds, every instance that carries
// its tag keys (karpenter.sh/nodepool, karpenter.k8s.aws/ec2nodeclass, the
// cluster tag) and has no NodeClaim, which is every instance Nodewright
// launches, and it would manage as its own the NodeClaim objects Nodewright
// writes. So while Karpenter's controller runs, Nodewright stands by: it
// launches nothing and adopts nothing, and says why. Karpenter's controller
// is seen by its leader-election Lease: a live Lease means a controller is
// elected and acting; a Lease that lapsed or was released means none is.
package handover

import (
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// LeaseName is the name of Karpenter's leader-election Lease (its
// --leader-election-name default), in whatever namespace Karpenter runs.
const LeaseName = "karpenter-leader-election"

// defaultLeaseDuration is the lease duration assumed when a Lease does not
// say (controller-runtime's default, which Karpenter keeps).
const defaultLeaseDuration = 15 * time.Second

// Controller is a running Karpenter controller, as its Lease shows it.
type Controller struct {
	// Namespace is where its Lease is; Holder the elected replica.
	Namespace, Holder string
	// Until is when the Lease lapses unless renewed.
	Until time.Time
}

// Holding names the Lease's namespace and holder ("kube-system/karpenter-7d9f"):
// what stays the same while the same replica keeps renewing.
func (c *Controller) Holding() string { return c.Namespace + "/" + c.Holder }

// String says which controller runs, for logs, events and status.
func (c *Controller) String() string {
	return fmt.Sprintf("Karpenter's controller holds Lease %s/%s (holder %s, renewed until %s)",
		c.Namespace, LeaseName, c.Holder, c.Until.UTC().Format(time.RFC3339))
}

// Message is what Nodewright says while it stands by.
func (c *Controller) Message() string {
	return c.String() + ": Nodewright launches and adopts nothing while Karpenter runs; " +
		"uninstall Karpenter's controller (or scale its Deployment to zero) to hand the cluster over"
}

// Running returns the Karpenter controller whose leader-election Lease is
// live at now, or nil when none is: a Lease named LeaseName with a holder,
// renewed (or acquired) less than its duration ago. Of several, the first by
// namespace.
func Running(leases []coordinationv1.Lease, now time.Time) *Controller {
	var out []*Controller
	for i := range leases {
		l := &leases[i]
		if l.Name != LeaseName || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			continue
		}
		at := l.Spec.RenewTime
		if at == nil {
			at = l.Spec.AcquireTime
		}
		if at == nil {
			continue
		}
		d := defaultLeaseDuration
		if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
			d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
		until := at.Add(d)
		if !until.After(now) {
			continue
		}
		out = append(out, &Controller{Namespace: l.Namespace, Holder: *l.Spec.HolderIdentity, Until: until})
	}
	if len(out) == 0 {
		return nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out[0]
}
