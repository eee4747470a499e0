package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
)

// ClusterSource names objects read from the API server in apis errors.
const ClusterSource = "cluster"

// Karpenter's resources, as the API serves them.
var (
	nodePoolsPath    = "/apis/" + apis.KarpenterGroup + "/" + apis.Version + "/nodepools"
	nodeClassesPath  = "/apis/" + apis.AWSGroup + "/" + apis.Version + "/ec2nodeclasses"
	nodeOverlaysPath = "/apis/" + apis.NodeOverlayAPIVersion + "/nodeoverlays"
	errNotInstalled  = errors.New("not installed")
	karpenterKindFor = map[string]string{nodePoolsPath: apis.NodePoolKind, nodeClassesPath: apis.EC2NodeClassKind, nodeOverlaysPath: apis.NodeOverlayKind}
)

// NodePools lists the cluster's NodePools, EC2NodeClasses and NodeOverlays
// (Karpenter's CRDs; NodeOverlays when the cluster serves them), decoded, defaulted and validated by package apis. installed is
// false when the cluster does not serve NodePools. invalid lists the objects
// that failed, by name and field path ("cluster: NodePool bad: spec.weight:
// 0 is out of range 1..100"); the valid ones are returned all the same.
func (c *Client) NodePools(ctx context.Context) (cfg *apis.Config, installed bool, invalid error, err error) {
	cfg = &apis.Config{}
	var bad apis.Errors
	for _, path := range []string{nodePoolsPath, nodeClassesPath, nodeOverlaysPath} {
		items, err := c.listRaw(ctx, path)
		if errors.Is(err, errNotInstalled) {
			continue
		}
		if apierrors.IsForbidden(err) {
			// Reading them is optional: a cluster role without them must
			// not stop provisioning from the deployed configuration.
			bad = append(bad, fmt.Errorf("%s: %s objects not readable: %w", ClusterSource, karpenterKindFor[path], err))
			continue
		}
		if err != nil {
			return nil, false, nil, err
		}
		if path == nodePoolsPath {
			installed = true
		}
		for _, item := range items {
			got, perr := apis.Parse(item, "")
			if got != nil {
				cfg.NodePools = append(cfg.NodePools, got.NodePools...)
				cfg.NodeClasses = append(cfg.NodeClasses, got.NodeClasses...)
				cfg.NodeOverlays = append(cfg.NodeOverlays, got.NodeOverlays...)
			}
			bad = append(bad, clusterErrors(perr, karpenterKindFor[path])...)
		}
	}
	if len(bad) > 0 {
		invalid = bad
	}
	return cfg, installed, invalid, nil
}

// clusterErrors renames the documents of apis errors as the cluster's objects.
func clusterErrors(err error, kind string) apis.Errors {
	if err == nil {
		return nil
	}
	var list apis.Errors
	if !errors.As(err, &list) {
		return apis.Errors{fmt.Errorf("%s: %s: %w", ClusterSource, kind, err)}
	}
	out := make(apis.Errors, 0, len(list))
	for _, e := range list {
		var de *apis.DocumentError
		if errors.As(e, &de) {
			c := *de
			c.Source, c.Index, c.Item = ClusterSource, 0, 0
			if c.Kind == "" {
				c.Kind = kind
			}
			out = append(out, &c)
			continue
		}
		out = append(out, fmt.Errorf("%s: %w", ClusterSource, e))
	}
	return out
}

// listRaw lists a custom resource (all pages) and returns its items as JSON.
// params are extra query parameters, as name and value pairs.
func (c *Client) listRaw(ctx context.Context, path string, params ...string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	cont := ""
	for {
		req := c.core.Get().AbsPath(path).Param("limit", fmt.Sprint(c.pageSize)).SetHeader("Accept", "application/json")
		for i := 0; i+1 < len(params); i += 2 {
			req = req.Param(params[i], params[i+1])
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		raw, err := req.Do(ctx).Raw()
		if apierrors.IsNotFound(err) {
			return nil, errNotInstalled
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", path, err)
		}
		var l struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("list %s: %w", path, err)
		}
		out = append(out, l.Items...)
		if cont = l.Metadata.Continue; cont == "" {
			return out, nil
		}
	}
}

// karpenter fills the View's NodePools and EC2NodeClasses.
func (c *Cache) karpenter(ctx context.Context, v *View) error {
	cfg, installed, invalid, err := c.c.NodePools(ctx)
	if err != nil {
		return err
	}
	v.KarpenterCRDs, v.NodePools, v.NodeClasses, v.Invalid = installed, cfg.NodePools, cfg.NodeClasses, invalid
	v.NodeOverlays = cfg.NodeOverlays
	if invalid != nil {
		c.opts.Log.Warn("invalid Karpenter objects in the cluster are ignored", "err", invalid.Error())
	}
	return nil
}

// PatchNodePoolStatus applies a JSON merge patch to a NodePool's status
// subresource.
func (c *Client) PatchNodePoolStatus(ctx context.Context, name string, patch []byte) error {
	err := c.core.Patch(types.MergePatchType).AbsPath(nodePoolsPath+"/"+name+"/status").SetHeader("Accept", "application/json").
		Body(patch).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("patch nodepool %s status: %w", name, err)
	}
	return nil
}

// PatchNodeClassStatus applies a JSON merge patch to an EC2NodeClass's
// status subresource.
func (c *Client) PatchNodeClassStatus(ctx context.Context, name string, patch []byte) error {
	err := c.core.Patch(types.MergePatchType).AbsPath(nodeClassesPath+"/"+name+"/status").SetHeader("Accept", "application/json").
		Body(patch).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("patch ec2nodeclass %s status: %w", name, err)
	}
	return nil
}
