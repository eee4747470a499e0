package apis

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Config is a set of NodePools, EC2NodeClasses and NodeOverlays read from
// YAML or JSON. NodePools, NodeClasses and NodeOverlays are sorted by name; Other holds the documents of
// other kinds (Pods, Deployments, ...) in source order, kept raw for callers
// that want them.
type Config struct {
	NodePools    []*NodePool
	NodeClasses  []*EC2NodeClass
	NodeOverlays []*NodeOverlay
	Other        []Document

	// origins records where each parsed object came from, for error messages.
	origins map[any]Document
}

// Document is one document of a source (or one item of a List document),
// identified by its type and name, with its content as JSON.
type Document struct {
	Source     string
	Index      int // 1-based position of the document in Source
	Item       int // 1-based position in a List document, 0 outside a List
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	JSON       []byte
}

// Origin returns where a NodePool or EC2NodeClass of the config was read from
// (Source, Index, Item, Kind, Name; no JSON). ok is false for objects that
// were not parsed, such as ones a caller added.
func (c *Config) Origin(obj any) (doc Document, ok bool) {
	doc, ok = c.origins[obj]
	return doc, ok
}

// NodePool returns the NodePool with the given name, or nil.
func (c *Config) NodePool(name string) *NodePool {
	for _, np := range c.NodePools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

// NodeClass returns the EC2NodeClass with the given name, or nil.
func (c *Config) NodeClass(name string) *EC2NodeClass {
	for _, nc := range c.NodeClasses {
		if nc.Name == name {
			return nc
		}
	}
	return nil
}

// merge appends other's objects and origins to c.
func (c *Config) merge(other *Config) {
	c.NodePools = append(c.NodePools, other.NodePools...)
	c.NodeClasses = append(c.NodeClasses, other.NodeClasses...)
	c.NodeOverlays = append(c.NodeOverlays, other.NodeOverlays...)
	c.Other = append(c.Other, other.Other...)
	if c.origins == nil {
		c.origins = map[any]Document{}
	}
	for k, v := range other.origins {
		c.origins[k] = v
	}
}

// sort orders NodePools and NodeClasses by name; objects with the same name
// keep their source order.
func (c *Config) sort() {
	sort.SliceStable(c.NodePools, func(i, j int) bool { return c.NodePools[i].Name < c.NodePools[j].Name })
	sort.SliceStable(c.NodeClasses, func(i, j int) bool { return c.NodeClasses[i].Name < c.NodeClasses[j].Name })
	sort.SliceStable(c.NodeOverlays, func(i, j int) bool { return c.NodeOverlays[i].Name < c.NodeOverlays[j].Name })
}

// Validate checks the config as a whole: every object on its own (as Parse
// does), no two NodePools or two EC2NodeClasses with the same name, and every
// NodePool's nodeClassRef naming an EC2NodeClass of the config (group
// karpenter.k8s.aws, kind EC2NodeClass: the only node class Nodewright
// launches). Parse and the loaders do not call it: a caller holding the whole
// configuration does.
// MaxNodePools is the most NodePools a configuration may hold: a solve
// prepares every pool against the whole catalog (about half a megabyte and a
// few milliseconds each with the 1,363 types), and 5,000 pools took 26 s and
// 2.3 GB, past what a function can spend.
const MaxNodePools = 250

func (c *Config) Validate() error {
	var errs Errors
	if len(c.NodePools) > MaxNodePools {
		errs = append(errs, fmt.Errorf("%d NodePools: Nodewright accepts at most %d (every solve prepares each pool against the whole instance catalog)", len(c.NodePools), MaxNodePools))
	}
	for _, np := range c.NodePools {
		errs = append(errs, c.objectErrors(np, NodePoolKind, np.Name, np.Validate())...)
	}
	for _, nc := range c.NodeClasses {
		errs = append(errs, c.objectErrors(nc, EC2NodeClassKind, nc.Name, nc.Validate())...)
	}
	seenOverlays := map[string]*NodeOverlay{}
	for _, o := range c.NodeOverlays {
		errs = append(errs, c.objectErrors(o, NodeOverlayKind, o.Name, o.Validate())...)
		if first, ok := seenOverlays[o.Name]; ok {
			errs = append(errs, c.docError(o, NodeOverlayKind, o.Name,
				fieldErrorf("metadata.name", "duplicate NodeOverlay name %q (%s)", o.Name, c.where(first))))
		}
		seenOverlays[o.Name] = o
	}
	errs = append(errs, c.duplicateErrors()...)
	errs = append(errs, c.referenceErrors()...)
	return errs.asError()
}

// objectErrors wraps an object's validation errors with where it came from.
func (c *Config) objectErrors(obj any, kind, name string, err error) Errors {
	if err == nil {
		return nil
	}
	list, ok := err.(ErrorList)
	if !ok {
		return Errors{c.docError(obj, kind, name, err)}
	}
	out := make(Errors, len(list))
	for i, fe := range list {
		out[i] = c.docError(obj, kind, name, fe)
	}
	return out
}

func (c *Config) docError(obj any, kind, name string, err error) *DocumentError {
	d := c.origins[obj]
	return &DocumentError{Source: d.Source, Index: d.Index, Item: d.Item, Kind: kind, Name: name, Err: err}
}

func (c *Config) where(obj any) string {
	d, ok := c.origins[obj]
	if !ok {
		return "elsewhere in the config"
	}
	loc := (&DocumentError{Source: d.Source, Index: d.Index, Item: d.Item}).location()
	return "also in " + loc
}

func (c *Config) duplicateErrors() Errors {
	var errs Errors
	seenPools := map[string]*NodePool{}
	for _, np := range c.NodePools {
		if first, ok := seenPools[np.Name]; ok {
			errs = append(errs, c.docError(np, NodePoolKind, np.Name,
				fieldErrorf("metadata.name", "duplicate NodePool name %q (%s)", np.Name, c.where(first))))
			continue
		}
		seenPools[np.Name] = np
	}
	seenClasses := map[string]*EC2NodeClass{}
	for _, nc := range c.NodeClasses {
		if first, ok := seenClasses[nc.Name]; ok {
			errs = append(errs, c.docError(nc, EC2NodeClassKind, nc.Name,
				fieldErrorf("metadata.name", "duplicate EC2NodeClass name %q (%s)", nc.Name, c.where(first))))
			continue
		}
		seenClasses[nc.Name] = nc
	}
	return errs
}

func (c *Config) referenceErrors() Errors {
	var errs Errors
	names := make([]string, 0, len(c.NodeClasses))
	for _, nc := range c.NodeClasses {
		if len(names) == 0 || names[len(names)-1] != nc.Name {
			names = append(names, nc.Name) // sorted, so duplicates are adjacent
		}
	}
	const refPath = "spec.template.spec.nodeClassRef"
	for _, np := range c.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || ref.Name == "" {
			continue // reported by the NodePool's own validation
		}
		var fe *FieldError
		switch {
		case ref.Group != AWSGroup || ref.Kind != EC2NodeClassKind:
			fe = fieldErrorf(refPath, "group %q, kind %q: Nodewright launches only group %s, kind %s",
				ref.Group, ref.Kind, AWSGroup, EC2NodeClassKind)
		case c.NodeClass(ref.Name) == nil:
			fe = fieldErrorf(refPath+".name", "EC2NodeClass %q not found (have: %s)", ref.Name, listOrNone(names))
		default:
			fe = osMismatch(np, c.NodeClass(ref.Name))
		}
		if fe != nil {
			errs = append(errs, c.docError(np, NodePoolKind, np.Name, fe))
		}
	}
	return errs
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// osMismatch reports a NodePool whose requirements disagree with the
// operating system of its EC2NodeClass's image: a Windows class needs a pool
// that requires kubernetes.io/os In [windows] (as Karpenter's Windows pools
// do: else the pool would offer Windows nodes to every Linux pod that names
// no OS), and a Linux class cannot serve a pool that requires windows.
// Custom images may be either, and are not checked.
func osMismatch(np *NodePool, nc *EC2NodeClass) *FieldError {
	const path = "spec.template.spec.requirements"
	family := nc.AMIFamily()
	values, required := poolOS(np)
	windowsOnly := required && len(values) == 1 && values[0] == OSWindows
	switch {
	case family == AMIFamilyCustom:
		return nil
	case IsWindowsFamily(family) && !windowsOnly:
		return fieldErrorf(path, "EC2NodeClass %q launches %s nodes: the NodePool must require %s In [%s] "+
			"(add {key: %s, operator: In, values: [%s]}), so that only Windows pods are planned on them",
			nc.Name, family, LabelOS, OSWindows, LabelOS, OSWindows)
	case !IsWindowsFamily(family) && required && !slices.Contains(values, OSLinux):
		return fieldErrorf(path, "%s In %v: EC2NodeClass %q launches %s (Linux) nodes; select a Windows image "+
			"(alias windows2022@latest) or require %s In [%s]", LabelOS, values, nc.Name, family, LabelOS, OSLinux)
	}
	return nil
}

// Operating systems of kubernetes.io/os.
const (
	OSLinux   = "linux"
	OSWindows = "windows"
)

// poolOS is the kubernetes.io/os values a NodePool's In requirements
// allow (their intersection; required false when none names it).
func poolOS(np *NodePool) (values []string, required bool) {
	for _, r := range np.Spec.Template.Spec.Requirements {
		if NormalizeLabel(r.Key) != LabelOS || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		if !required {
			values, required = slices.Clone(r.Values), true
			continue
		}
		values = slices.DeleteFunc(values, func(v string) bool { return !slices.Contains(r.Values, v) })
	}
	slices.Sort(values)
	return values, required
}
