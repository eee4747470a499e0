package fleet

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/nodecost"
)

// The volumes the plan prices for a class without block device mappings
// are the ones its launch template gives a node, family by family.
func TestDefaultVolumesArePriced(t *testing.T) {
	for _, family := range []string{"al2023@latest", "bottlerocket@latest"} {
		nc := &apis.EC2NodeClass{Spec: apis.EC2NodeClassSpec{AMISelectorTerms: []apis.AMISelectorTerm{{Alias: family}}}}
		launched := blockDeviceMappings(nil, nc.AMIFamily())
		priced := nodecost.Volumes(nc)
		if len(launched) != len(priced) {
			t.Fatalf("%s: launches %d volumes, prices %d", family, len(launched), len(priced))
		}
		for i, b := range launched {
			if p := priced[i]; int64(aws.ToInt32(b.Ebs.VolumeSize)) != p.GiB || string(b.Ebs.VolumeType) != p.Type {
				t.Errorf("%s volume %d: launched %d GiB %s, priced %+v", family, i, aws.ToInt32(b.Ebs.VolumeSize), b.Ebs.VolumeType, p)
			}
		}
	}
}
