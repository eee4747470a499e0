package quantity

import (
	"errors"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestConvert(t *testing.T) {
	cases := []struct {
		q           string
		milli, unit int64
		milliErr    bool
		unitErr     bool
	}{
		{"250m", 250, 1, false, false},
		{"1.5", 1500, 2, false, false},
		{"64Gi", 64 << 30 * 1000, 64 << 30, false, false},
		{"4Pi", 0, 4 << 50, true, false},
		{"4503599627370", 4503599627370000, 4503599627370, false, false},
		{"4503599627371", 0, 4503599627371, true, false},
		{"9223372036854776", 0, 9223372036854776, true, true}, // the cpu request
		{"9223372036854775807", 0, 0, true, true},
		{"1e18", 0, 0, true, true},
		{"-9223372036854776", 0, 0, true, true},
		{"-1", -1000, -1, false, false},
	}
	for _, tc := range cases {
		q := resource.MustParse(tc.q)
		m, err := Milli(q)
		if (err != nil) != tc.milliErr || (err == nil && m != tc.milli) {
			t.Errorf("Milli(%s) = %d, %v", tc.q, m, err)
		}
		if err != nil && (!errors.Is(err, ErrRange) || !strings.Contains(err.Error(), tc.q)) {
			t.Errorf("Milli(%s) error %v", tc.q, err)
		}
		u, err := Value(q)
		if tc.unit > Max {
			tc.unitErr = true
		}
		if (err != nil) != tc.unitErr || (err == nil && u != tc.unit) {
			t.Errorf("Value(%s) = %d, %v", tc.q, u, err)
		}
	}
}

// The wrap this package exists for: MilliValue turns a huge request negative.
func TestMilliValueWrapsButMilliDoesNot(t *testing.T) {
	q := resource.MustParse("9223372036854776")
	if q.MilliValue() >= 0 {
		t.Fatalf("MilliValue no longer wraps (%d): the test premise changed", q.MilliValue())
	}
	if _, err := Milli(q); err == nil {
		t.Fatal("Milli accepted it")
	}
	if got := Clamped(corev1.ResourceCPU, q); got != Max {
		t.Fatalf("Clamped = %d, want Max", got)
	}
	if got := Clamped(corev1.ResourceMemory, resource.MustParse("-1e18")); got != -Max {
		t.Fatalf("Clamped negative = %d", got)
	}
	if got := Clamped(corev1.ResourceMemory, resource.MustParse("1Gi")); got != 1<<30 {
		t.Fatalf("Clamped 1Gi = %d", got)
	}
	if float64(2000*Max) >= math.MaxInt64 || float64(Max) != math.Pow(2, 52) {
		t.Fatal("Max is not small enough")
	}
}
