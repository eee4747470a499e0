package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/nodeclaim"
)

// The API server's NodeClaims (nodeclaim.API), as JSON objects: creates
// that ignore the status, merge patches of the object or of its status
// subresource (a resourceVersion in the patch is a precondition), and
// deletes held by finalizers.

var (
	nodeClaimsResource = schema.GroupResource{Group: apis.KarpenterGroup, Resource: nodeclaim.Resource}
	claimConflict      = fault{name: "409 Conflict", err: apierrors.NewConflict(nodeClaimsResource, "nodeclaim", fmt.Errorf("the object has been modified"))}
)

func (k *Kube) ListNodeClaims(ctx context.Context) ([]json.RawMessage, error) {
	var out []json.RawMessage
	err := k.w.call(ctx, "Kube", "ListNodeClaims", []fault{kubeGone}, func() error {
		for _, name := range slices.Sorted(maps.Keys(k.claims)) {
			b, err := json.Marshal(k.claims[name])
			if err != nil {
				return err
			}
			out = append(out, b)
		}
		return nil
	})
	return out, err
}

func (k *Kube) CreateNodeClaim(ctx context.Context, body []byte) ([]byte, error) {
	var out []byte
	err := k.w.call(ctx, "Kube", "CreateNodeClaim", nil, func() error {
		obj := map[string]any{}
		if err := json.Unmarshal(body, &obj); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if k.claims[name] != nil {
			return apierrors.NewAlreadyExists(nodeClaimsResource, name)
		}
		delete(obj, "status")
		k.gen++
		meta["uid"], meta["resourceVersion"] = fmt.Sprintf("uid-%d", k.gen), fmt.Sprint(k.gen)
		k.claims[name] = obj
		k.w.changed = true
		var err error
		out, err = json.Marshal(obj)
		return err
	})
	return out, err
}

func (k *Kube) PatchNodeClaim(ctx context.Context, name string, status bool, patch []byte) ([]byte, error) {
	var out []byte
	err := k.w.call(ctx, "Kube", "PatchNodeClaim", []fault{claimConflict}, func() error {
		obj := k.claims[name]
		if obj == nil {
			return apierrors.NewNotFound(nodeClaimsResource, name)
		}
		p := map[string]any{}
		if err := json.Unmarshal(patch, &p); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		meta := obj["metadata"].(map[string]any)
		if pm, ok := p["metadata"].(map[string]any); ok {
			if rv, ok := pm["resourceVersion"]; ok && rv != meta["resourceVersion"] {
				return apierrors.NewConflict(nodeClaimsResource, name, fmt.Errorf("the object has been modified"))
			}
		}
		before, _ := json.Marshal(obj)
		if status {
			p = map[string]any{"status": p["status"]}
		} else {
			delete(p, "status")
		}
		merged := mergePatch(obj, p).(map[string]any)
		after, _ := json.Marshal(merged)
		if string(before) != string(after) {
			k.gen++
			merged["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(k.gen)
			k.claims[name] = merged
			k.w.changed = true
		}
		if m := merged["metadata"].(map[string]any); m["deletionTimestamp"] != nil && len(asList(m["finalizers"])) == 0 {
			delete(k.claims, name)
		}
		var err error
		out, err = json.Marshal(merged)
		return err
	})
	return out, err
}

func (k *Kube) DeleteNodeClaim(ctx context.Context, name string) error {
	return k.w.call(ctx, "Kube", "DeleteNodeClaim", nil, func() error {
		return k.deleteClaim(name)
	})
}

// deleteClaim marks a NodeClaim deleted (it goes once its finalizers are).
func (k *Kube) deleteClaim(name string) error {
	obj := k.claims[name]
	if obj == nil {
		return apierrors.NewNotFound(nodeClaimsResource, name)
	}
	meta := obj["metadata"].(map[string]any)
	k.w.changed = true
	if len(asList(meta["finalizers"])) == 0 {
		delete(k.claims, name)
		return nil
	}
	if meta["deletionTimestamp"] == nil {
		k.gen++
		meta["deletionTimestamp"], meta["resourceVersion"] = k.w.clock.Now().UTC().Format("2006-01-02T15:04:05Z"), fmt.Sprint(k.gen)
	}
	return nil
}

// nodeClaims decodes the objects (for the invariants).
func (k *Kube) nodeClaims() map[string]*nodeclaim.NodeClaim {
	out := map[string]*nodeclaim.NodeClaim{}
	for name, obj := range k.claims {
		b, _ := json.Marshal(obj)
		nc := &nodeclaim.NodeClaim{}
		if json.Unmarshal(b, nc) == nil {
			out[name] = nc
		}
	}
	return out
}

// mergePatch applies a JSON merge patch (RFC 7386).
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	} else {
		t = maps.Clone(t)
	}
	for key, v := range p {
		if v == nil {
			delete(t, key)
			continue
		}
		t[key] = mergePatch(t[key], v)
	}
	return t
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
