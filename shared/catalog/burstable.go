package catalog

import (
	"math"
	"strings"
)

// Burstable performance types (t1, t2, t3, t3a, t4g) sustain only a baseline
// share of each vCPU. Above it they either throttle to the baseline
// (standard credit mode) or bill the surplus per vCPU-hour (unlimited
// mode). A node autoscaler that packs pods by their CPU requests must know
// both: a t3a.medium at 1.8 requested vCPU sustains 0.4 and bills 1.4.

// CPU credit modes of burstable types (EC2's CreditSpecification values).
const (
	CreditsStandard  = "standard"
	CreditsUnlimited = "unlimited"
)

// BurstDate is when the baselines and surplus rates below were read from
// AWS's public pages: the baseline utilisation per vCPU of each size (EC2
// User Guide, "CPU credits and baseline utilization for burstable
// performance instances"; t2.2xlarge's 135% over 8 vCPUs is 16.875%) and the
// surplus rate of unlimited mode on Linux (EC2 On-Demand pricing page, "T2/T3
// Unlimited": $0.05 per vCPU-hour for t2, t3 and t3a, $0.04 for t4g; the
// same in every commercial region).
const BurstDate = "2026-11-27"

// burstFamilies are each burstable family's baseline per vCPU (a fraction
// of one vCPU) by size, its default credit mode and its surplus rate.
var burstFamilies = map[string]struct {
	baseline   map[string]float64
	mode       string
	perVCPUHrs float64
}{
	"t2": {map[string]float64{"nano": 0.05, "micro": 0.10, "small": 0.20, "medium": 0.20, "large": 0.30,
		"xlarge": 0.225, "2xlarge": 0.16875}, CreditsStandard, 0.05},
	"t3": {map[string]float64{"nano": 0.05, "micro": 0.10, "small": 0.20, "medium": 0.20, "large": 0.30,
		"xlarge": 0.40, "2xlarge": 0.40}, CreditsUnlimited, 0.05},
	"t3a": {map[string]float64{"nano": 0.05, "micro": 0.10, "small": 0.20, "medium": 0.20, "large": 0.30,
		"xlarge": 0.40, "2xlarge": 0.40}, CreditsUnlimited, 0.05},
	"t4g": {map[string]float64{"nano": 0.05, "micro": 0.10, "small": 0.20, "medium": 0.20, "large": 0.30,
		"xlarge": 0.40, "2xlarge": 0.40}, CreditsUnlimited, 0.04},
	// t1.micro (previous generation) bursts with no published baseline and
	// no credit specification: nothing it sustains is promised, so no
	// requested CPU is placed on it, and no credit mode is pinned.
	"t1": {map[string]float64{"micro": 0}, CreditsStandard, 0},
}

// noCreditSpecification are the burstable families EC2 takes no
// CreditSpecification for.
var noCreditSpecification = map[string]bool{"t1": true}

// Burst is how a burstable type spends CPU above its baseline.
type Burst struct {
	// BaselinePerVCPU is the share of each vCPU the type sustains (0.2: 20%).
	BaselinePerVCPU float64
	// BaselineMilliCPU is the whole node's baseline in millicores.
	BaselineMilliCPU int64
	// Mode is the credit mode EC2 launches the family in by default, and
	// the one Nodewright prices and pins in its launch templates.
	Mode string
	// SurplusPerVCPUHour is what unlimited mode bills per vCPU-hour above
	// the baseline.
	SurplusPerVCPUHour float64
}

// Burstable is the type's burst behaviour; ok is false for types that
// sustain every vCPU.
func (it *InstanceType) Burstable() (b Burst, ok bool) {
	f, ok := burstFamilies[it.Family]
	if !ok {
		return Burst{}, false
	}
	share, ok := f.baseline[it.Size]
	if !ok {
		return Burst{}, false
	}
	return Burst{BaselinePerVCPU: share, BaselineMilliCPU: int64(math.Round(share * float64(it.VCPU) * 1000)),
		Mode: f.mode, SurplusPerVCPUHour: f.perVCPUHrs}, true
}

// SurplusPerHour is what a node of the burst's type bills per hour in
// unlimited mode when its pods request milliCPU and use what they request
// (0 in standard mode, or at or below the baseline).
func (b Burst) SurplusPerHour(milliCPU int64) float64 {
	if b.Mode != CreditsUnlimited || milliCPU <= b.BaselineMilliCPU {
		return 0
	}
	return float64(milliCPU-b.BaselineMilliCPU) / 1000 * b.SurplusPerVCPUHour
}

// CreditMode is the credit mode a launch of any of the named types should
// pin: the mode their prices assumed. Unlimited when any of them is priced
// unlimited (a standard type among them was given no more requested CPU
// than its baseline, so unlimited bills it nothing for its requests),
// standard when the burstable ones are all standard, "" when none is
// burstable.
func CreditMode(types []string) string {
	mode := ""
	for _, name := range types {
		family, _, _ := strings.Cut(name, ".")
		f, ok := burstFamilies[family]
		if !ok || noCreditSpecification[family] {
			continue
		}
		if f.mode == CreditsUnlimited {
			return CreditsUnlimited
		}
		mode = f.mode
	}
	return mode
}
