// Package quantity converts Kubernetes resource quantities to the integers
// Nodewright counts with (millicores for cpu, units for everything else)
// without wrapping around.
//
// resource.Quantity's MilliValue and Value wrap silently past int64: a pod
// asking for cpu "9223372036854776" becomes about -9.2e18 millicores and then
// fits anywhere. Every conversion goes through this package instead, which
// bounds amounts at Max: large enough for any real node, pod or limit, small
// enough that sums of thousands of bounded amounts cannot overflow, and exact
// in a float64.
package quantity

import (
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Max is the largest amount a conversion returns: 2^52 (4.5e15), that is
// 4.5e12 cores in millicores or 4 PiB in bytes. A sum of 2,000 amounts of
// this size still fits in an int64.
const Max = int64(1) << 52

// ErrRange is returned (wrapped) for a quantity whose amount is beyond Max
// in either direction.
var ErrRange = errors.New("out of range")

// Milli returns q in thousandths (rounded up, as MilliValue does).
func Milli(q resource.Quantity) (int64, error) { return convert(q, 1000) }

// Value returns q in units (rounded up, as Value does).
func Value(q resource.Quantity) (int64, error) { return convert(q, 1) }

// Of converts q as Nodewright counts resource name: cpu in millicores,
// everything else in units.
func Of(name corev1.ResourceName, q resource.Quantity) (int64, error) {
	if name == corev1.ResourceCPU {
		return Milli(q)
	}
	return Value(q)
}

// Clamped is Of with out-of-range amounts saturated at Max (or -Max): for
// input that validation has not seen, where a huge amount must still compare
// as huge.
func Clamped(name corev1.ResourceName, q resource.Quantity) int64 {
	v, err := Of(name, q)
	if err == nil {
		return v
	}
	if q.Sign() < 0 {
		return -Max
	}
	return Max
}

func convert(q resource.Quantity, scale float64) (int64, error) {
	// The float is approximate, but Max is far inside the int64 range, so
	// anything the check admits converts exactly and anything it refuses is
	// beyond Max give or take a few parts in 10^16.
	if f := q.AsApproximateFloat64() * scale; math.IsNaN(f) || f > float64(Max) || f < -float64(Max) {
		return 0, fmt.Errorf("%s is %w (at most %s)", q.String(), ErrRange, maxString(scale))
	}
	if scale == 1000 {
		return q.MilliValue(), nil
	}
	return q.Value(), nil
}

// maxString is Max in the quantity's own units: whole cores for cpu (Max
// millicores), else Max (4Pi).
func maxString(scale float64) string {
	if scale == 1000 {
		return resource.NewQuantity(Max/1000, resource.DecimalSI).String()
	}
	return resource.NewQuantity(Max, resource.BinarySI).String()
}
