package player

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/nodewright/nodewright/test/localcloud"
)

// applier applies and deletes any Kubernetes objects, as `kubectl apply
// --server-side` and `kubectl delete` do.
type applier struct {
	dyn    dynamic.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(lc *localcloud.Cloud) (*applier, error) {
	dyn, err := dynamic.NewForConfig(lc.REST)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(lc.REST)
	if err != nil {
		return nil, err
	}
	disc := memory.NewMemCacheClient(dc)
	return &applier{dyn: dyn, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)}, nil
}

// Objects reads the objects of a YAML (or JSON) file with several
// documents.
func Objects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d: want apiVersion, kind and metadata.name", path, i)
		}
		out = append(out, u)
	}
}

// mapping finds the resource of a kind, rediscovering once (CRDs applied
// a moment ago).
func (a *applier) mapping(gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
	m, err := a.mapper.RESTMapping(gk, version)
	if err != nil && meta.IsNoMatchError(err) {
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gk, version)
	}
	return m, err
}

// Apply applies a file's objects in order (server-side apply, field
// manager nodewright-scenario, forced).
func (a *applier) Apply(ctx context.Context, path string) ([]string, error) {
	objs, err := Objects(path)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := a.mapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return done, fmt.Errorf("%s: %s %s: %w", path, gvk.Kind, u.GetName(), err)
		}
		var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
		name := u.GetName()
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if u.GetNamespace() == "" {
				u.SetNamespace(metav1.NamespaceDefault)
			}
			ri = a.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
			name = u.GetNamespace() + "/" + name
		}
		b, err := u.MarshalJSON()
		if err != nil {
			return done, err
		}
		force := true
		if err := retryConflict(ctx, func() error {
			_, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "nodewright-scenario", Force: &force})
			return err
		}); err != nil {
			return done, fmt.Errorf("%s: apply %s %s: %w", path, gvk.Kind, name, err)
		}
		done = append(done, gvk.Kind+" "+name)
	}
	return done, nil
}

// Delete deletes one object by kind (any group) and name.
func (a *applier) Delete(ctx context.Context, kind, namespace, name string) error {
	m, err := a.kind(kind)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if namespace == "" {
			namespace = metav1.NamespaceDefault
		}
		ri = a.dyn.Resource(m.Resource).Namespace(namespace)
	}
	bg := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return fmt.Errorf("delete %s %s: %w", kind, name, err)
	}
	return nil
}

// kind finds a kind in any group the API server serves (the preferred
// version).
func (a *applier) kind(kind string) (*meta.RESTMapping, error) {
	lists, err := a.disc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.EqualFold(r.Kind, kind) && !strings.Contains(r.Name, "/") {
				return a.mapping(schema.GroupKind{Group: gv.Group, Kind: r.Kind}, gv.Version)
			}
		}
	}
	return nil, fmt.Errorf("kind %q: the API server serves no such kind", kind)
}

// retryConflict retries fn on conflicts for up to 10 s.
func retryConflict(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fn()
		if err == nil || !apierrors.IsConflict(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
