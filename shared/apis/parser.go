package apis

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// parser turns the documents of one source into a Config.
type parser struct {
	source string
	cfg    *Config
	errs   Errors
}

// header is what every Kubernetes object starts with.
type header struct {
	APIVersion, Kind, Name, Namespace string
}

// docRef identifies a document (or List item) for errors and Documents.
type docRef struct {
	index, item int
	header
}

func (p *parser) fail(ref docRef, err error) {
	p.errs = append(p.errs, &DocumentError{Source: p.source, Index: ref.index, Item: ref.item, Kind: ref.Kind, Name: ref.Name, Err: err})
}

func (p *parser) failAll(ref docRef, errs ErrorList) {
	for _, e := range errs {
		p.fail(ref, e)
	}
}

func (p *parser) document(d rawDocument) {
	ref := docRef{index: d.index}
	if d.err != nil {
		p.fail(ref, d.err)
		return
	}
	p.object(ref, d.json, header{}, false)
}

// object reads one object; inherited fills apiVersion and kind for the items
// of a typed list (NodePoolList) that leave them out.
func (p *parser) object(ref docRef, data []byte, inherited header, inList bool) {
	h, errs := readHeader(data, inherited)
	ref.header = h
	if len(errs) > 0 {
		p.failAll(ref, errs)
		return
	}
	group, version := splitAPIVersion(h.APIVersion)
	switch {
	case isList(group, h.Kind):
		if inList {
			p.fail(ref, fieldErrorf("kind", "a %s inside a List is not supported", h.Kind))
			return
		}
		p.list(ref, data, group, version)
	case h.Kind == NodePoolKind && group == KarpenterGroup:
		p.nodePool(ref, data, version)
	case h.Kind == EC2NodeClassKind && group == AWSGroup:
		p.nodeClass(ref, data, version)
	case h.Kind == NodeOverlayKind && group == KarpenterGroup:
		p.nodeOverlay(ref, data, version)
	case isLegacyKind(group, h.Kind):
		p.fail(ref, fieldErrorf("kind", "%s (%s) is not supported: Nodewright reads %s %s and %s %s",
			h.Kind, h.APIVersion, NodePoolKind, NodePoolAPIVersion, EC2NodeClassKind, EC2NodeClassAPIVersion))
	case group == KarpenterGroup || group == AWSGroup:
		p.fail(ref, fieldErrorf("kind", "%s (%s) is not configuration Nodewright reads (it reads %s %s and %s %s): remove the document",
			h.Kind, h.APIVersion, NodePoolKind, NodePoolAPIVersion, EC2NodeClassKind, EC2NodeClassAPIVersion))
	default:
		p.cfg.Other = append(p.cfg.Other, p.doc(ref, data))
	}
}

func (p *parser) nodeOverlay(ref docRef, data []byte, version string) {
	if version != "v1alpha1" {
		p.fail(ref, fieldErrorf("apiVersion", "%q is not supported: Nodewright reads %s", ref.APIVersion, NodeOverlayAPIVersion))
		return
	}
	o := &NodeOverlay{}
	if errs := decodeStrict(data, o); len(errs) > 0 {
		p.failAll(ref, withRefusals(Refusals(NodeOverlayKind, data), errs.sorted()))
		return
	}
	if err := o.Validate(); err != nil {
		p.failAll(ref, err.(ErrorList))
		return
	}
	p.cfg.NodeOverlays = append(p.cfg.NodeOverlays, o)
	p.cfg.origins[o] = p.doc(ref, nil)
}

func (p *parser) doc(ref docRef, data []byte) Document {
	return Document{Source: p.source, Index: ref.index, Item: ref.item, APIVersion: ref.APIVersion,
		Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, JSON: data}
}

func (p *parser) checkVersion(ref docRef, version, want string) bool {
	if version == Version {
		return true
	}
	p.fail(ref, fieldErrorf("apiVersion", "%q is not supported: Nodewright reads %s (see Karpenter's v1 migration guide)", ref.APIVersion, want))
	return false
}

func (p *parser) nodePool(ref docRef, data []byte, version string) {
	if !p.checkVersion(ref, version, NodePoolAPIVersion) {
		return
	}
	np := &NodePool{}
	if errs := decodeStrict(data, np); len(errs) > 0 {
		p.failAll(ref, withRefusals(Refusals(NodePoolKind, data), errs.sorted()))
		return
	}
	np.Default()
	if err := np.Validate(); err != nil {
		p.failAll(ref, err.(ErrorList))
		return
	}
	p.cfg.NodePools = append(p.cfg.NodePools, np)
	p.cfg.origins[np] = p.doc(ref, nil)
}

func (p *parser) nodeClass(ref docRef, data []byte, version string) {
	if !p.checkVersion(ref, version, EC2NodeClassAPIVersion) {
		return
	}
	nc := &EC2NodeClass{}
	if errs := decodeStrict(data, nc); len(errs) > 0 {
		p.failAll(ref, withRefusals(Refusals(EC2NodeClassKind, data), errs.sorted()))
		return
	}
	nc.Default()
	if err := nc.Validate(); err != nil {
		p.failAll(ref, err.(ErrorList))
		return
	}
	p.cfg.NodeClasses = append(p.cfg.NodeClasses, nc)
	p.cfg.origins[nc] = p.doc(ref, nil)
}

// list expands the items of a List (or NodePoolList, EC2NodeClassList).
func (p *parser) list(ref docRef, data []byte, group, version string) {
	var l struct {
		metav1.TypeMeta `json:",inline"`
		metav1.ListMeta `json:"metadata,omitempty"`
		Items           []json.RawMessage `json:"items"`
	}
	if errs := decodeStrict(data, &l); len(errs) > 0 {
		p.failAll(ref, errs.sorted())
		return
	}
	var inherited header
	if group != "" {
		inherited = header{APIVersion: ref.APIVersion, Kind: strings.TrimSuffix(ref.Kind, "List")}
	}
	for i, item := range l.Items {
		p.object(docRef{index: ref.index, item: i + 1}, item, inherited, true)
	}
}

// readHeader reads apiVersion, kind and metadata name and namespace; a
// document that is not a mapping or lacks apiVersion or kind is an error.
func readHeader(data []byte, inherited header) (header, ErrorList) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return header{}, ErrorList{{Detail: fmt.Sprintf("not a Kubernetes object: want a mapping with apiVersion and kind, got %s", compactValue(data))}}
	}
	h := inherited
	var errs ErrorList
	for _, f := range []struct {
		name string
		dst  *string
	}{{"apiVersion", &h.APIVersion}, {"kind", &h.Kind}} {
		raw, ok := top[f.name]
		if !ok || isNull(raw) {
			if *f.dst == "" {
				errs = append(errs, fieldErrorf(f.name, "required"))
			}
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil || *f.dst == "" {
			errs = append(errs, fieldErrorf(f.name, "%s is not a valid apiVersion or kind", compactValue(raw)))
		}
	}
	var meta struct{ Name, Namespace string }
	if raw, ok := top["metadata"]; ok {
		_ = json.Unmarshal(raw, &meta) // a malformed metadata is reported by the strict decode
	}
	h.Name, h.Namespace = meta.Name, meta.Namespace
	return h, errs
}

func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

func isList(group, kind string) bool {
	return kind == "List" && group == "" ||
		kind == NodePoolKind+"List" && group == KarpenterGroup ||
		kind == EC2NodeClassKind+"List" && group == AWSGroup ||
		kind == NodeOverlayKind+"List" && group == KarpenterGroup
}

// isLegacyKind reports Karpenter's pre-v1beta1 kinds, which Nodewright cannot
// read.
func isLegacyKind(group, kind string) bool {
	return group == KarpenterGroup && (kind == "Provisioner" || kind == "Machine") ||
		group == AWSGroup && kind == "AWSNodeTemplate"
}
