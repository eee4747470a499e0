package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/handover"
)

const leasesPath = "/apis/coordination.k8s.io/v1/leases"

// KarpenterLeases lists Karpenter's leader-election Leases
// (handover.LeaseName) in every namespace, with only the fields
// handover.Running reads, sorted by namespace. It is one list call with a
// field selector: the API server sends no other Lease. readable is false
// when the cluster role may not list Leases: the caller cannot tell whether
// Karpenter runs and says so.
func (c *Client) KarpenterLeases(ctx context.Context) (leases []coordinationv1.Lease, readable bool, err error) {
	items, err := c.listRaw(ctx, leasesPath, "fieldSelector", "metadata.name="+handover.LeaseName)
	if apierrors.IsForbidden(err) {
		return nil, false, nil
	}
	if errors.Is(err, errNotInstalled) {
		return nil, true, nil
	}
	if err != nil {
		return nil, true, err
	}
	for _, item := range items {
		var l coordinationv1.Lease
		if err := json.Unmarshal(item, &l); err != nil {
			return nil, true, fmt.Errorf("list leases: %w", err)
		}
		leases = append(leases, coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: l.Spec.HolderIdentity, LeaseDurationSeconds: l.Spec.LeaseDurationSeconds,
				AcquireTime: l.Spec.AcquireTime, RenewTime: l.Spec.RenewTime},
		})
	}
	sort.Slice(leases, func(i, j int) bool { return leases[i].Namespace < leases[j].Namespace })
	return leases, true, nil
}
