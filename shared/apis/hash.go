package apis

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// Hash versions: bump when a change to the types, defaults or hashing would
// change the hash of an unchanged object, so stored hashes can be recomputed
// instead of every node counting as drifted.
const (
	NodePoolHashVersion     = "v1"
	EC2NodeClassHashVersion = "v1"
)

// Hash returns a stable 16-hex-digit hash of what a node launched from this
// NodePool is built from: the defaulted template (labels, annotations, taints,
// startup taints, nodeClassRef, expireAfter, terminationGracePeriod). As in
// Karpenter it leaves out requirements (a node drifts on those when its
// labels stop satisfying them, not when the list changes) and everything
// outside the template (disruption, budgets, limits, weight). The order of
// lists and zero or unset values do not change it.
func (np *NodePool) Hash() string {
	var c NodePool
	if !jsonCopy(np, &c) {
		return ""
	}
	c.Default()
	t := c.Spec.Template
	t.Spec.Requirements = nil
	if d := t.Spec.ExpireAfter.Duration; d != nil {
		t.Spec.ExpireAfter.Raw = d.String()
	}
	return hashOf(t)
}

// Hash returns a stable 16-hex-digit hash of what an instance launched with
// this EC2NodeClass is built from: the defaulted spec with the AMI family as
// AMIFamily() resolves it. As in Karpenter it leaves out the selector terms
// (subnets, security groups, AMIs and capacity reservations drift through
// what they resolve to) and ipPrefixCount. The order of lists and zero or
// unset values do not change it.
func (nc *EC2NodeClass) Hash() string {
	var c EC2NodeClass
	if !jsonCopy(nc, &c) {
		return ""
	}
	c.Default()
	s := c.Spec
	family := c.AMIFamily()
	s.AMIFamily = &family
	s.AMISelectorTerms, s.SubnetSelectorTerms, s.SecurityGroupSelectorTerms, s.CapacityReservationSelectorTerms = nil, nil, nil, nil
	s.IPPrefixCount = nil
	return hashOf(s)
}

func jsonCopy(src, dst any) bool {
	b, err := json.Marshal(src)
	return err == nil && json.Unmarshal(b, dst) == nil
}

// hashOf hashes v's JSON form after canonicalizing it: zero values dropped,
// map keys sorted, list items sorted (lists count as sets).
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return ""
	}
	canon, _ := json.Marshal(canonical(generic))
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:8])
}

// canonical drops zero values and sorts lists by their canonical JSON.
func canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if c := canonical(val); c != nil {
				out[k] = c
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		items := make([]string, 0, len(x))
		for _, val := range x {
			if c := canonical(val); c != nil {
				b, _ := json.Marshal(c)
				items = append(items, string(b))
			}
		}
		if len(items) == 0 {
			return nil
		}
		sort.Strings(items)
		out := make([]json.RawMessage, len(items))
		for i, s := range items {
			out[i] = json.RawMessage(s)
		}
		return out
	case string:
		if x == "" {
			return nil
		}
	case bool:
		if !x {
			return nil
		}
	case json.Number:
		if x == "0" {
			return nil
		}
	}
	return v
}
