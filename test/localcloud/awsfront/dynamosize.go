package awsfront

// DynamoDB's billing arithmetic, as the developer guide states it ("DynamoDB
// item sizes and formats" and "DynamoDB read and write operations"): moto
// answers every call with the same ConsumedCapacity, so the front computes
// the units itself from the items' sizes (dynamometer.go applies these
// rules to the calls it forwards). Everything here is pure: items in, units
// out.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// ddbItem is an item (or a key) in DynamoDB's JSON wire form: attribute
// name -> attribute value ({"S":"x"}, {"N":"1"}, {"M":{...}}, ...).
type ddbItem map[string]json.RawMessage

const (
	readUnitBytes  = 4 << 10 // a read unit covers 4 KB
	writeUnitBytes = 1 << 10 // a write unit covers 1 KB
)

// Consistency is a read's kind, which sets its price per 4 KB.
type Consistency int

const (
	Eventual      Consistency = iota // 0.5 read unit per 4 KB
	Strong                           // 1 read unit per 4 KB
	Transactional                    // 2 read units per 4 KB
)

// ItemSize is an item's size as DynamoDB bills it: the UTF-8 length of
// every attribute name plus the size of its value.
func ItemSize(it ddbItem) (int, error) {
	n := 0
	for name, raw := range it {
		v, err := valueSize(raw)
		if err != nil {
			return 0, fmt.Errorf("attribute %q: %w", name, err)
		}
		n += len(name) + v
	}
	return n, nil
}

// valueSize is one attribute value's size without its name: strings by
// their UTF-8 bytes, numbers one byte per two significant digits plus one,
// binaries by their raw bytes, null and Boolean one byte, sets the sum of
// their members, lists and maps 3 bytes plus one byte per element plus the
// elements (a map's element counting its name).
func valueSize(raw json.RawMessage) (int, error) {
	var av map[string]json.RawMessage
	if err := json.Unmarshal(raw, &av); err != nil {
		return 0, fmt.Errorf("attribute value: %w", err)
	}
	if len(av) != 1 {
		return 0, fmt.Errorf("attribute value with %d types", len(av))
	}
	for typ, v := range av {
		switch typ {
		case "S":
			var s string
			err := json.Unmarshal(v, &s)
			return len(s), err
		case "N":
			var s string
			err := json.Unmarshal(v, &s)
			return numberSize(s), err
		case "B":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return 0, err
			}
			b, err := base64.StdEncoding.DecodeString(s)
			return len(b), err
		case "BOOL", "NULL":
			return 1, nil
		case "SS", "NS", "BS":
			var ss []string
			if err := json.Unmarshal(v, &ss); err != nil {
				return 0, err
			}
			n := 0
			for _, s := range ss {
				switch typ {
				case "SS":
					n += len(s)
				case "NS":
					n += numberSize(s)
				default:
					b, err := base64.StdEncoding.DecodeString(s)
					if err != nil {
						return 0, err
					}
					n += len(b)
				}
			}
			return n, nil
		case "L":
			var l []json.RawMessage
			if err := json.Unmarshal(v, &l); err != nil {
				return 0, err
			}
			n := 3
			for _, e := range l {
				s, err := valueSize(e)
				if err != nil {
					return 0, err
				}
				n += s + 1
			}
			return n, nil
		case "M":
			var m ddbItem
			if err := json.Unmarshal(v, &m); err != nil {
				return 0, err
			}
			s, err := ItemSize(m)
			return 3 + s + len(m), err
		default:
			return 0, fmt.Errorf("unknown attribute type %q", typ)
		}
	}
	return 0, nil
}

// numberSize is a number's size: one byte per two significant digits
// (leading and trailing zeroes trimmed), plus one.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	digits := max(len(s), 1)
	return (digits+1)/2 + 1
}

// ReadUnits are the read units of reading size bytes at once: size rounded
// up to 4 KB (a read of nothing still costs the minimum, one 4 KB unit),
// times 0.5, 1 or 2 by the consistency.
func ReadUnits(size int, c Consistency) float64 {
	blocks := float64(max((size+readUnitBytes-1)/readUnitBytes, 1))
	switch c {
	case Strong:
		return blocks
	case Transactional:
		return 2 * blocks
	}
	return blocks / 2
}

// WriteUnits are the write units of writing an item of size bytes: size
// rounded up to 1 KB (at least one), twice that in a transaction.
func WriteUnits(size int, transactional bool) float64 {
	blocks := float64(max((size+writeUnitBytes-1)/writeUnitBytes, 1))
	if transactional {
		return 2 * blocks
	}
	return blocks
}

// tableSchema is what the units of a write depend on: the table's key and
// its secondary indexes.
type tableSchema struct {
	keys    []string // partition key, then sort key if any
	indexes []indexSchema
}

// indexSchema is one secondary index: its key and what it projects.
type indexSchema struct {
	name       string
	keys       []string
	projection string   // ALL, KEYS_ONLY or INCLUDE
	include    []string // INCLUDE's non-key attributes
}

// key is the item's primary key (nil when an attribute of it is missing).
func (s tableSchema) key(it ddbItem) ddbItem {
	k := ddbItem{}
	for _, a := range s.keys {
		v, ok := it[a]
		if !ok {
			return nil
		}
		k[a] = v
	}
	return k
}

// entry is the index's entry for the item: nil when the item lacks one of
// the index's key attributes (an index is sparse), else its projected
// attributes (the table's and the index's keys always among them).
func (x indexSchema) entry(table tableSchema, it ddbItem) ddbItem {
	if it == nil {
		return nil
	}
	for _, a := range x.keys {
		if _, ok := it[a]; !ok {
			return nil
		}
	}
	if x.projection == "ALL" {
		return it
	}
	e := ddbItem{}
	for _, list := range [][]string{table.keys, x.keys, x.include} {
		for _, a := range list {
			if v, ok := it[a]; ok {
				e[a] = v
			}
		}
	}
	return e
}

// writeCost is the write units of changing an item from before to after
// (nil: absent) in the table, and in its secondary indexes, as DynamoDB
// bills a PutItem, UpdateItem or DeleteItem: the larger of the item before
// and after, rounded up to 1 KB. An index is written once when an entry
// appears, disappears or has its projected attributes changed, and twice
// (a delete and a put) when its key changes; an item in no index before or
// after costs the index nothing.
func writeCost(s tableSchema, before, after ddbItem, transactional bool) (table, index float64, err error) {
	b, err := ItemSize(before)
	if err != nil {
		return 0, 0, err
	}
	a, err := ItemSize(after)
	if err != nil {
		return 0, 0, err
	}
	table = WriteUnits(max(a, b), transactional)
	for _, x := range s.indexes {
		old, nu := x.entry(s, before), x.entry(s, after)
		switch {
		case old == nil && nu == nil:
		case old == nil:
			index += mustWriteUnits(nu)
		case nu == nil:
			index += mustWriteUnits(old)
		case !sameValues(old, nu, x.keys):
			index += mustWriteUnits(old) + mustWriteUnits(nu)
		case !sameValues(old, nu, nil):
			index += WriteUnits(max(sizeOf(old), sizeOf(nu)), false)
		}
	}
	return table, index, nil
}

func sizeOf(it ddbItem) int {
	n, _ := ItemSize(it) // already sized without error by writeCost
	return n
}

func mustWriteUnits(it ddbItem) float64 { return WriteUnits(sizeOf(it), false) }

// sameValues reports whether a and b hold equal values for names (every
// attribute of either when names is nil), comparing decoded JSON so that
// spacing and key order do not matter.
func sameValues(a, b ddbItem, names []string) bool {
	if names == nil {
		if len(a) != len(b) {
			return false
		}
		for n := range a {
			names = append(names, n)
		}
	}
	for _, n := range names {
		var va, vb any
		ra, oka := a[n]
		rb, okb := b[n]
		if oka != okb {
			return false
		}
		if !oka {
			continue
		}
		if json.Unmarshal(ra, &va) != nil || json.Unmarshal(rb, &vb) != nil || !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}
