package statetest

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Units are the capacity units a table consumed, as DynamoDB bills them
// (on-demand request units are the same figures): a strongly consistent
// read is a unit per 4 KB (a Query's items summed, then rounded up; a
// GetItem's or each BatchGetItem key's item rounded up, a unit for one
// that does not exist), a write a unit per KB of the larger of the item
// before and after, twice that in a transaction (a condition check
// counted as a transactional write of the item it checks). Every read is
// taken as strongly consistent: the store makes no other.
type Units struct {
	Read, Write int64
}

// Units returns the capacity units consumed so far.
func (d *DB) Units() Units {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.units
}

func (u *Units) read(it item) { u.Read += ceilDiv(ItemSize(it), 4096) }

func (u *Units) queried(its []item) {
	n := 0
	for _, it := range its {
		n += ItemSize(it)
	}
	u.Read += ceilDiv(n, 4096)
}

func (u *Units) wrote(factor int64, before, after item) {
	u.Write += factor * ceilDiv(max(ItemSize(before), ItemSize(after)), 1024)
}

// ceilDiv is n/per rounded up, at least 1.
func ceilDiv(n, per int) int64 { return max(1, int64((n+per-1)/per)) }

// ItemSize is an item's size as DynamoDB counts it: each attribute's name
// and value; strings and binaries by their bytes, numbers about a byte per
// two significant digits plus one, booleans and nulls one byte, sets their
// members, lists and maps three bytes plus a byte and the size of each
// element (and a map's keys).
func ItemSize(it item) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch av := v.(type) {
	case *types.AttributeValueMemberS:
		return len(av.Value)
	case *types.AttributeValueMemberN:
		return numberSize(av.Value)
	case *types.AttributeValueMemberB:
		return len(av.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range av.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range av.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range av.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range av.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 1
}

func numberSize(s string) int {
	s = strings.TrimLeft(strings.TrimLeft(s, "-"), "0.")
	digits := strings.Count(s, "") - 1 - strings.Count(s, ".")
	return (digits+1)/2 + 1
}
