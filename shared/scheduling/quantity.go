package scheduling

import (
	"math"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// quantity turns a dimension's integer back into a Kubernetes quantity, in
// the units people read: cpu in cores or millicores, bytes in binary units.
func quantity(i int, x int64) resource.Quantity {
	switch i {
	case rCPU:
		return *resource.NewMilliQuantity(x, resource.DecimalSI)
	case rMemory, rEphemeral:
		return *resource.NewQuantity(x, resource.BinarySI)
	}
	return *resource.NewQuantity(x, resource.DecimalSI)
}

// human formats one dimension's amount for messages: cores or millicores,
// GiB or MiB, plain counts.
func human(i int, x int64) string {
	switch i {
	case rCPU:
		if x%1000 == 0 {
			return strconv.FormatInt(x/1000, 10)
		}
		return strconv.FormatInt(x, 10) + "m"
	case rMemory, rEphemeral:
		const mi, gi, ti = 1 << 20, 1 << 30, 1 << 40
		switch {
		case x >= ti && x%ti == 0:
			return strconv.FormatInt(x/ti, 10) + "Ti"
		case x >= gi:
			return trimFloat(float64(x)/gi) + "Gi"
		default:
			return trimFloat(float64(x)/mi) + "Mi"
		}
	}
	return strconv.FormatInt(x, 10)
}

func trimFloat(f float64) string {
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}
