package scheduling

import (
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// InstanceTypesFor lists the instance types a NodePool can launch in the
// given zones, in name order: those its requirements allow (GPU and other
// exotic types included) that have an offering in a zone and capacity type it
// allows. spot nil offers no spot capacity. The error names a requirement
// that cannot be read.
func InstanceTypesFor(np *apis.NodePool, types []*catalog.InstanceType, zones []string, spot catalog.SpotPricer) ([]*catalog.InstanceType, error) {
	in := &Input{InstanceTypes: types, Zones: zones, Spot: spot}
	s := &solver{in: in, reg: newRegistry(), sets: map[string]*reqSet{}}
	s.u = newUniverse(in)
	p := s.newPool(np, nil)
	if p.err != nil {
		return nil, p.err
	}
	both := p.types.clone()
	both.or(p.exotic)
	var out []*catalog.InstanceType
	both.each(func(t int) bool {
		out = append(out, s.u.types[t])
		return true
	})
	return out, nil
}
