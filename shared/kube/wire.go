package kube

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
)

// This file reads the API server's protobuf encoding at the wire level, so
// that a list is decoded one object at a time and only in the parts a trim
// keeps. A pod as the API server sends it is mostly what TrimPod drops
// (managed fields, annotations, images, environment, probes, volume
// mounts, container statuses); decoding those parts costs allocations the
// garbage collector then has to trace and free, which made most of a cold
// read's CPU. A wireFilter skips them in the encoded bytes (a varint read
// and a length skip each), and the object is decoded from what remains.
//
// The filters are an optimisation of the trims, never a replacement: the
// trim still runs on the decoded object, and each filter keeps a superset
// of what its trim keeps (TestWireFiltersKeepWhatTrimsKeep holds every
// filter to its trim on fully populated objects).

// protobufMagic starts every protobuf body the API server sends
// (k8s.io/apimachinery's protobuf serializer), before a runtime.Unknown.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// Protobuf wire types used here (protowire's).
const wireBytes = int(protowire.BytesType)

var errWire = errors.New("malformed protobuf")

// wireField is one field of an encoded message: its number, wire type,
// whole encoding (tag included) and, for a length-delimited field, its
// payload.
type wireField struct {
	num     int
	typ     int
	whole   []byte
	tagLen  int
	payload []byte
}

// nextField splits the first field off b (protowire's parsing; groups, which
// the API server's types do not have, are refused).
func nextField(b []byte) (wireField, []byte, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return wireField{}, nil, fmt.Errorf("%w: %v", errWire, protowire.ParseError(n))
	}
	if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
		return wireField{}, nil, fmt.Errorf("%w: wire type %d", errWire, typ)
	}
	f := wireField{num: int(num), typ: int(typ), tagLen: n}
	m := protowire.ConsumeFieldValue(num, typ, b[n:])
	if m < 0 {
		return wireField{}, nil, fmt.Errorf("%w: %v", errWire, protowire.ParseError(m))
	}
	end := n + m
	if typ == protowire.BytesType {
		payload, _ := protowire.ConsumeBytes(b[n:end])
		f.payload = payload
	}
	f.whole = b[:end]
	return f, b[end:], nil
}

// wireFilter says which fields of one message type to keep.
type wireFilter struct {
	// keep, when set, lists the only fields kept; drop lists fields dropped
	// otherwise.
	keep, drop []int
	// sub filters a kept message field's payload.
	sub map[int]*wireFilter
	// entry decides, for a kept length-delimited field (a repeated
	// message's element, a map's entry), whether this one is kept.
	entry map[int]func(payload []byte) bool
}

func (f *wireFilter) keeps(num int) bool {
	if f.keep != nil {
		return slices.Contains(f.keep, num)
	}
	return !slices.Contains(f.drop, num)
}

// apply appends to dst the fields of src that f keeps, filtered.
func (f *wireFilter) apply(dst, src []byte) ([]byte, error) {
	for len(src) > 0 {
		fld, rest, err := nextField(src)
		if err != nil {
			return dst, err
		}
		src = rest
		if !f.keeps(fld.num) {
			continue
		}
		if fld.typ != wireBytes {
			dst = append(dst, fld.whole...)
			continue
		}
		if e := f.entry[fld.num]; e != nil && !e(fld.payload) {
			continue
		}
		sub := f.sub[fld.num]
		if sub == nil {
			dst = append(dst, fld.whole...)
			continue
		}
		// The filtered payload is written after the tag, then moved right
		// to make room for its length.
		dst = append(dst, fld.whole[:fld.tagLen]...)
		mark := len(dst)
		if dst, err = sub.apply(dst, fld.payload); err != nil {
			return dst, err
		}
		l := len(dst) - mark
		k := protowire.SizeVarint(uint64(l))
		for i := 0; i < k; i++ {
			dst = append(dst, 0)
		}
		copy(dst[mark+k:], dst[mark:mark+l])
		protowire.AppendVarint(dst[mark:mark], uint64(l))
	}
	return dst, nil
}

// stringField returns the first string field num of an encoded message.
func stringField(msg []byte, num int) (string, bool) {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return "", false
		}
		if f.num == num && f.typ == wireBytes {
			return string(f.payload), true
		}
		msg = rest
	}
	return "", false
}

// hasField says whether an encoded message has field num.
func hasField(msg []byte, num int) bool {
	for len(msg) > 0 {
		f, rest, err := nextField(msg)
		if err != nil {
			return true // let the decoder report it
		}
		if f.num == num {
			return true
		}
		msg = rest
	}
	return false
}

// metaFilter is ObjectMeta's: managed fields (17) dropped, annotations (12:
// map entries of key 1 and value 2) kept only as trimMeta keeps them.
func metaFilter(keep, prefixes []string) *wireFilter {
	return &wireFilter{drop: []int{17}, entry: map[int]func([]byte) bool{12: func(e []byte) bool {
		k, ok := stringField(e, 1)
		return !ok || keepAnnotation(k, keep, prefixes)
	}}}
}

// containerFilter keeps what trimContainers keeps: name (1), ports (6),
// resources (8: requests 2 and claims 3, not limits 1) and restart policy (24).
var containerFilter = &wireFilter{keep: []int{1, 6, 8, 24}, sub: map[int]*wireFilter{8: {keep: []int{2, 3}}}}

// keptConditions are the pod condition types TrimPod keeps.
var keptConditions = []string{string(corev1.PodScheduled), string(corev1.PodReady), string(corev1.DisruptionTarget)}

// podFilter keeps what TrimPod keeps of a Pod (metadata 1, spec 2, status 3).
var podFilter = &wireFilter{sub: map[int]*wireFilter{
	1: metaFilter(keptPodAnnotations, nil),
	2: podSpecFilter,
	// PodStatus: phase 1, conditions 2, startTime 7, containerStatuses 8,
	// qosClass 9, nominatedNodeName 11.
	3: {keep: []int{1, 2, 7, 8, 9, 11}, sub: map[int]*wireFilter{
		// PodCondition: type 1, status 2, lastTransitionTime 4, reason 5.
		2: {keep: []int{1, 2, 4, 5}},
		// ContainerStatus: name 1, allocatedResources 10, resources 11.
		8: {keep: []int{1, 10, 11}},
	}, entry: map[int]func([]byte) bool{2: func(c []byte) bool {
		t, _ := stringField(c, 1)
		return slices.Contains(keptConditions, t)
	}}},
}}

// podSpecFilter is trimPodSpec's: containers (2) and init containers (20)
// as trimContainers keeps them; volumes (1) only of a persistent volume claim
// (VolumeSource 2, field 10) or a generic ephemeral volume (29); no
// ephemeral containers (34), image pull secrets (15), security context
// (14), DNS config (26), host aliases (23), readiness gates (28), hostname
// (16), subdomain (17), service account (8, 9, 21) or service links (30).
var podSpecFilter = &wireFilter{
	drop: []int{8, 9, 14, 15, 16, 17, 21, 23, 26, 28, 30, 34},
	sub:  map[int]*wireFilter{2: containerFilter, 20: containerFilter},
	entry: map[int]func([]byte) bool{1: func(v []byte) bool {
		for len(v) > 0 {
			f, rest, err := nextField(v)
			if err != nil {
				return true
			}
			if f.num == 2 && f.typ == wireBytes {
				return hasField(f.payload, 10) || hasField(f.payload, 29)
			}
			v = rest
		}
		return false
	}},
}

// nodeFilter keeps what TrimNode keeps of a Node: no managed fields, only
// Karpenter's and Nodewright's annotations, and a status (3) without daemon
// endpoints (6), images (8), volumes (9, 10) or config (11), its conditions
// (4) without messages (6).
var nodeFilter = &wireFilter{sub: map[int]*wireFilter{
	1: metaFilter(nil, nodeAnnotationPrefixes),
	3: {drop: []int{6, 8, 9, 10, 11}, sub: map[int]*wireFilter{4: {drop: []int{6}}}},
}}

// protobufList splits an encoded list body (magic, runtime.Unknown whose raw
// bytes (2) are a List: metadata 1, items 2) into its ListMeta's encoding
// and its items' encodings.
func protobufList(body []byte) (meta []byte, items [][]byte, err error) {
	if !bytes.HasPrefix(body, protobufMagic) {
		return nil, nil, fmt.Errorf("%w: not the API server's protobuf", errWire)
	}
	var raw []byte
	for b := body[len(protobufMagic):]; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return nil, nil, err
		}
		if f.num == 2 && f.typ == wireBytes {
			raw = f.payload
		}
		b = rest
	}
	for len(raw) > 0 {
		f, rest, err := nextField(raw)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case f.num == 1 && f.typ == wireBytes:
			meta = f.payload
		case f.num == 2 && f.typ == wireBytes:
			items = append(items, f.payload)
		}
		raw = rest
	}
	return meta, items, nil
}
