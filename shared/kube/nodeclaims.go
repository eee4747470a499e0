package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/nodeclaim"
)

// nodeClaimsPath is where the API serves NodeClaims (karpenter.sh/v1).
var nodeClaimsPath = "/apis/" + apis.KarpenterGroup + "/" + apis.Version + "/" + nodeclaim.Resource

// ListNodeClaims lists the NodeClaim objects as JSON
// (nodeclaim.ErrNotInstalled when the cluster serves none).
func (c *Client) ListNodeClaims(ctx context.Context) ([]json.RawMessage, error) {
	items, err := c.listRaw(ctx, nodeClaimsPath)
	if errors.Is(err, errNotInstalled) {
		return nil, nodeclaim.ErrNotInstalled
	}
	return items, err
}

// CreateNodeClaim creates a NodeClaim from its JSON and returns the object
// as stored.
func (c *Client) CreateNodeClaim(ctx context.Context, body []byte) ([]byte, error) {
	raw, err := rawResult(c.core.Post().AbsPath(nodeClaimsPath).SetHeader("Content-Type", "application/json").
		SetHeader("Accept", "application/json").Body(body).Do(ctx))
	if err != nil {
		return nil, fmt.Errorf("create nodeclaim: %w", err)
	}
	return raw, nil
}

// PatchNodeClaim applies a JSON merge patch to a NodeClaim, or to its
// status subresource, and returns the object as stored.
func (c *Client) PatchNodeClaim(ctx context.Context, name string, status bool, patch []byte) ([]byte, error) {
	path := nodeClaimsPath + "/" + name
	if status {
		path += "/status"
	}
	raw, err := rawResult(c.core.Patch(types.MergePatchType).AbsPath(path).SetHeader("Accept", "application/json").
		Body(patch).Do(ctx))
	if err != nil {
		return nil, fmt.Errorf("patch nodeclaim %s: %w", name, err)
	}
	return raw, nil
}

// DeleteNodeClaim deletes a NodeClaim (its finalizer holds it until
// released).
func (c *Client) DeleteNodeClaim(ctx context.Context, name string) error {
	if err := c.core.Delete().AbsPath(nodeClaimsPath + "/" + name).Do(ctx).Error(); err != nil {
		return fmt.Errorf("delete nodeclaim %s: %w", name, err)
	}
	return nil
}

// rawResult is the result's body, or its error with the API server's
// Status (Raw alone gives only the generic text of the HTTP code).
func rawResult(res rest.Result) ([]byte, error) {
	raw, err := res.Raw()
	if err != nil {
		return nil, res.Error()
	}
	return raw, nil
}
