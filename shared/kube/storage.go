package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// StorageClasses lists the StorageClasses, decoded from JSON into the
// fields volume topology reads (their binding mode, allowedTopologies,
// provisioner, creation time and default-class annotation).
func (c *Client) StorageClasses(ctx context.Context) ([]*scheduling.StorageClass, error) {
	items, err := c.listRaw(ctx, storageClassesPath)
	if errors.Is(err, errNotInstalled) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]*scheduling.StorageClass, 0, len(items))
	for _, item := range items {
		sc := &scheduling.StorageClass{}
		if err := json.Unmarshal(item, sc); err != nil {
			return nil, fmt.Errorf("list storageclasses: %w", err)
		}
		trimMeta(&sc.ObjectMeta, keptClassAnnotations, nil)
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

const storageClassesPath = "/apis/storage.k8s.io/v1/storageclasses"
