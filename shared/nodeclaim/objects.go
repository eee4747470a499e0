package nodeclaim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
)

// API is the API server's NodeClaim resource as raw JSON (*kube.Client).
// List returns ErrNotInstalled when the cluster does not serve NodeClaims.
type API interface {
	ListNodeClaims(ctx context.Context) ([]json.RawMessage, error)
	CreateNodeClaim(ctx context.Context, body []byte) ([]byte, error)
	// PatchNodeClaim applies a JSON merge patch to the object, or to its
	// status subresource when status is set.
	PatchNodeClaim(ctx context.Context, name string, status bool, patch []byte) ([]byte, error)
	DeleteNodeClaim(ctx context.Context, name string) error
}

// ErrNotInstalled says the cluster serves no NodeClaims (no CRD).
var ErrNotInstalled = errors.New("the NodeClaim CRD is not installed")

// Objects reads and writes NodeClaim objects through an API.
type Objects struct {
	API API
	Log *slog.Logger
}

// Report is what Apply did, by NodeClaim name.
type Report struct {
	Created  []string `json:"created,omitempty"`
	Updated  []string `json:"updated,omitempty"`
	Deleted  []string `json:"deleted,omitempty"`
	Released []string `json:"released,omitempty"`
}

// List returns the cluster's NodeClaims (nil when none is served).
func (o *Objects) List(ctx context.Context) ([]*NodeClaim, error) {
	items, err := o.API.ListNodeClaims(ctx)
	if errors.Is(err, ErrNotInstalled) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("list nodeclaims: %w", err)
	}
	out := make([]*NodeClaim, 0, len(items))
	for _, it := range items {
		nc := &NodeClaim{}
		if err := json.Unmarshal(it, nc); err != nil {
			return nil, fmt.Errorf("list nodeclaims: decode: %w", err)
		}
		out = append(out, nc)
	}
	return out, nil
}

// Ensure creates nc (and writes its status) unless an object of its name
// exists, and returns the object's UID: the events about the NodeClaim
// name it.
func (o *Objects) Ensure(ctx context.Context, nc *NodeClaim) (types.UID, error) {
	got, err := o.create(ctx, nc)
	if err != nil {
		return "", err
	}
	return got.UID, nil
}

// create creates nc, then writes its status (the API server ignores the
// status of a create); an object already there is returned as it is.
func (o *Objects) create(ctx context.Context, nc *NodeClaim) (*NodeClaim, error) {
	body, err := json.Marshal(nc)
	if err != nil {
		return nil, fmt.Errorf("create nodeclaim %s: %w", nc.Name, err)
	}
	raw, err := o.API.CreateNodeClaim(ctx, body)
	if apierrors.IsAlreadyExists(err) {
		// Created by another invocation (or before a crash): its status
		// is the sweep's to bring in step.
		raw, err = o.API.PatchNodeClaim(ctx, nc.Name, false, []byte(`{}`))
		if err != nil {
			return nil, fmt.Errorf("read nodeclaim %s: %w", nc.Name, err)
		}
		return decode(nc.Name, raw)
	}
	if apierrors.IsNotFound(err) {
		return nil, ErrNotInstalled // no NodeClaim resource to create in
	}
	if err != nil {
		return nil, fmt.Errorf("create nodeclaim %s: %w", nc.Name, err)
	}
	got, err := decode(nc.Name, raw)
	if err != nil {
		return nil, err
	}
	if err := o.writeStatus(ctx, nc.Name, nc.Status); err != nil {
		return got, err
	}
	return got, nil
}

func decode(name string, raw []byte) (*NodeClaim, error) {
	nc := &NodeClaim{}
	if err := json.Unmarshal(raw, nc); err != nil {
		return nil, fmt.Errorf("nodeclaim %s: decode: %w", name, err)
	}
	return nc, nil
}

func (o *Objects) writeStatus(ctx context.Context, name string, st Status) error {
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return fmt.Errorf("nodeclaim %s status: %w", name, err)
	}
	if _, err := o.API.PatchNodeClaim(ctx, name, true, patch); err != nil {
		return fmt.Errorf("nodeclaim %s status: %w", name, err)
	}
	return nil
}

// Apply carries out p (current is what p was planned from). Each write is idempotent: a sweep that dies between two leaves
// the next one to find the difference again. An error on one NodeClaim is
// logged and the rest carried on; the first is returned.
func (o *Objects) Apply(ctx context.Context, p Plan, current []*NodeClaim) (Report, error) {
	var rep Report
	var first error
	fail := func(err error) {
		o.log().Warn("nodeclaim object", "error", err)
		if first == nil {
			first = err
		}
	}
	for _, nc := range p.Create {
		if _, err := o.create(ctx, nc); err != nil {
			fail(err)
			continue
		}
		rep.Created = append(rep.Created, nc.Name)
	}
	for _, u := range p.Update {
		if u.Meta != nil {
			patch, err := json.Marshal(map[string]any{"metadata": u.Meta})
			if err == nil {
				_, err = o.API.PatchNodeClaim(ctx, u.Name, false, patch)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				fail(fmt.Errorf("nodeclaim %s metadata: %w", u.Name, err))
				continue
			}
		}
		if u.Status != nil {
			if err := o.writeStatus(ctx, u.Name, *u.Status); err != nil && !apierrors.IsNotFound(errors.Unwrap(err)) {
				fail(err)
				continue
			}
		}
		rep.Updated = append(rep.Updated, u.Name)
	}
	for _, name := range p.Delete {
		if err := o.API.DeleteNodeClaim(ctx, name); err != nil && !apierrors.IsNotFound(err) {
			fail(fmt.Errorf("delete nodeclaim %s: %w", name, err))
			continue
		}
		// Its finalizer comes off in the next sweep, which sees it
		// deleted (the delete changed its resourceVersion).
		rep.Deleted = append(rep.Deleted, name)
	}
	finalizers := map[string]metav1.ObjectMeta{}
	for _, c := range current {
		finalizers[c.Name] = c.ObjectMeta
	}
	for _, name := range p.Release {
		meta := finalizers[name]
		if !slices.Contains(meta.Finalizers, apis.FinalizerTermination) {
			continue
		}
		rest := slices.DeleteFunc(slices.Clone(meta.Finalizers), func(f string) bool { return f == apis.FinalizerTermination })
		// The resourceVersion makes it a conditional write: a finalizer
		// another controller added meanwhile is not lost (a conflict
		// leaves it to the next sweep).
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": rest, "resourceVersion": meta.ResourceVersion}})
		if err == nil {
			_, err = o.API.PatchNodeClaim(ctx, name, false, patch)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			fail(fmt.Errorf("release nodeclaim %s: %w", name, err))
			continue
		}
		rep.Released = append(rep.Released, name)
	}
	return rep, first
}

func (o *Objects) log() *slog.Logger {
	if o.Log == nil {
		return slog.Default()
	}
	return o.Log
}
