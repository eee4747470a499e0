package catalog

import (
	"math"
	"testing"
)

func TestBurstable(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		name     string
		baseline int64 // millicores
		mode     string
		rate     float64
	}{
		{"t3a.medium", 400, CreditsUnlimited, 0.05},
		{"t3.nano", 100, CreditsUnlimited, 0.05},
		{"t3.2xlarge", 3200, CreditsUnlimited, 0.05},
		{"t4g.large", 600, CreditsUnlimited, 0.04},
		{"t2.micro", 100, CreditsStandard, 0.05},
		{"t2.xlarge", 900, CreditsStandard, 0.05},
		{"t2.2xlarge", 1350, CreditsStandard, 0.05},
	} {
		it, ok := c.Get(tc.name)
		if !ok {
			t.Fatalf("%s not in the catalog", tc.name)
		}
		b, ok := it.Burstable()
		if !ok || b.BaselineMilliCPU != tc.baseline || b.Mode != tc.mode || b.SurplusPerVCPUHour != tc.rate {
			t.Errorf("%s: %+v, %v; want baseline %dm, %s, $%v per vCPU-hour", tc.name, b, ok, tc.baseline, tc.mode, tc.rate)
		}
	}
	// Every size of every burstable family in the catalog has a baseline.
	for _, it := range c.Types() {
		if _, fam := burstFamilies[it.Family]; fam {
			if _, ok := it.Burstable(); !ok {
				t.Errorf("%s is burstable but has no baseline", it.Name)
			}
		}
	}
	m5, _ := c.Get("m5.large")
	if b, ok := m5.Burstable(); ok {
		t.Errorf("m5.large burstable: %+v", b)
	}
}

func TestSurplusPerHour(t *testing.T) {
	it, _ := Default().Get("t3a.medium")
	b, _ := it.Burstable()
	// The example: two pods of 900m on a t3a.medium bill 1.4 vCPU.
	if got := b.SurplusPerHour(1800); math.Abs(got-1.4*0.05) > 1e-12 {
		t.Errorf("t3a.medium at 1800m: %v, want %v", got, 1.4*0.05)
	}
	if got := b.SurplusPerHour(400); got != 0 {
		t.Errorf("at the baseline: %v, want 0", got)
	}
	t2, _ := Default().Get("t2.medium")
	b2, _ := t2.Burstable()
	if got := b2.SurplusPerHour(1800); got != 0 {
		t.Errorf("standard mode bills no surplus: %v", got)
	}
}

func TestCreditMode(t *testing.T) {
	for _, tc := range []struct {
		types []string
		want  string
	}{
		{[]string{"m5.large", "c5.large"}, ""},
		{[]string{"t2.medium", "m5.large"}, CreditsStandard},
		{[]string{"t1.micro"}, ""},
		{[]string{"t2.medium", "t3.medium"}, CreditsUnlimited},
		{[]string{"t4g.small"}, CreditsUnlimited},
	} {
		if got := CreditMode(tc.types); got != tc.want {
			t.Errorf("CreditMode(%v) = %q, want %q", tc.types, got, tc.want)
		}
	}
}
