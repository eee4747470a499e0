package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	storagev1 "k8s.io/api/storage/v1"
)

// StorageClasses lists the StorageClasses as storage.k8s.io/v1 objects
// (JSON: they are tens of objects), their metadata trimmed to what volume
// topology reads (creation time and the default-class annotation).
func (c *Client) StorageClasses(ctx context.Context) ([]*storagev1.StorageClass, error) {
	items, err := c.listRaw(ctx, storageClassesPath)
	if errors.Is(err, errNotInstalled) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]*storagev1.StorageClass, 0, len(items))
	for _, item := range items {
		sc := &storagev1.StorageClass{}
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
