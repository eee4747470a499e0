package player

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/report"
)

// nodeClaims lists the cluster's NodeClaim objects with kubectl's columns
// (`kubectl get nodeclaims`), by name.
func nodeClaims(ctx context.Context, lc *localcloud.Cloud) ([]report.NodeClaim, error) {
	raw, err := lc.Kube.Discovery().RESTClient().Get().AbsPath("/apis/karpenter.sh/v1/nodeclaims").DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		return []report.NodeClaim{}, nil // a cloud started without the CRDs
	}
	if err != nil {
		return nil, fmt.Errorf("list nodeclaims: %w", err)
	}
	var list struct {
		Items []nodeclaim.NodeClaim `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("list nodeclaims: %w", err)
	}
	out := []report.NodeClaim{}
	for _, nc := range list.Items {
		row := report.NodeClaim{
			Name: nc.Name, NodePool: nc.Labels[apis.LabelNodePool], InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
			CapacityType: nc.Labels[apis.LabelCapacityType], Zone: nc.Labels[corev1.LabelTopologyZone], Node: nc.Status.NodeName,
		}
		if c := nc.Condition(nodeclaim.ConditionReady); c != nil {
			row.Ready = string(c.Status)
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
