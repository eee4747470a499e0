package stack

import (
	"fmt"
	"math"
)

// Memory sized from measurement. Each function's Lambda memory setting
// comes from this one table: the peak it needs at the design point (a
// cluster of 5,000 nodes and 150,000 pods), where that figure comes from,
// and the setting that the headroom rule gives. `make bench-scale` measures
// the peaks and docs/benchmarks.md keeps its table; a figure marked
// Estimate is not yet measured at that size and says how it was reached.

// The headroom rule: a setting is at least MemoryHeadroom times the
// measured peak, rounded up to a multiple of MemoryStepMB, and never under
// Lambda's minimum. The half above the peak covers what the peak does not
// see: the binary and runtime outside the Go heap, a larger cluster than
// measured, and the collector's lag.
const (
	MemoryHeadroom   = 1.5
	MemoryStepMB     = 64
	lambdaMinMemory  = 128
	lambdaMaxMemory  = 10240
	goMemLimitFactor = 0.9 // GOMEMLIMIT is 90% of the setting
)

// envGoMemLimit is the Go runtime's soft memory limit: set on every
// function to about 90% of its memory, so that the collector works harder
// as the heap nears the limit instead of the function running out of
// memory.
const envGoMemLimit = "GOMEMLIMIT"

// MemorySizing is one function's row of the table.
type MemorySizing struct {
	// PeakMiB is the function's peak memory (Go heap at its peak) in MiB at
	// 5,000 nodes and 150,000 pods.
	PeakMiB int
	// Estimate is true when PeakMiB was not measured at that size.
	Estimate bool
	// Source says where PeakMiB comes from, with its date.
	Source string
	// SettingMB is the memory setting (Lambda's MB are MiB); at least
	// RequiredMemoryMB(PeakMiB), and more where CPU, which Lambda grants in
	// proportion to memory, is the reason.
	SettingMB int
	// Why explains a setting above the rule's minimum ("" when it is the
	// minimum).
	Why string
}

// scalePeakSource is where the three cluster-reading functions' peaks come
// from: make bench-scale (test/scale) measured each pass's Go heap peak at
// 5,000 nodes and 150,000 pods (docs/benchmarks.md, Scale); the figures
// include the in-process AWS front's share, so they overstate the
// function's own.
const scalePeakSource = "measured by make bench-scale at 5,000 nodes / 150,000 pods (2026-11-28): "

// cpuReason: Lambda grants CPU in proportion to memory (a whole vCPU at
// 1,769 MB), and these functions' cold read, solve and simulations are
// CPU-bound at the design point.
const cpuReason = "CPU: Lambda grants a whole vCPU at 1,769 MB; the cold read of 150,000 pods and the solve (or a tick's simulations) are CPU-bound"

// MemoryTable is every function's memory sizing.
func MemoryTable() map[string]MemorySizing {
	return map[string]MemorySizing{
		FnProvision: {PeakMiB: 1019, SettingMB: 2176, Why: cpuReason,
			Source: scalePeakSource + "a 1,000-pod burst 1,019 MiB, a new container's sweep (the cold read) 844 MiB"},
		FnConsolidation: {PeakMiB: 1025, SettingMB: 2176, Why: cpuReason,
			Source: scalePeakSource + "a new container's tick 1,025 MiB (993 in the run the docs show)"},
		// The interruption function reads the cluster's view to find the
		// pods of the nodes it drains, and drains many nodes at once.
		FnInterruption: {PeakMiB: 1553, SettingMB: 2368,
			Source: scalePeakSource + "a new container's first 10 spot warnings 1,553 MiB (1,212 in the run the docs show), 100 warnings at once in a warm one 1,339 MiB"},
		FnWebhook: {PeakMiB: 32, Estimate: true, SettingMB: 256,
			Source: "estimate: one AdmissionReview and one asynchronous invoke, independent of the cluster's size; the Go runtime and a 13 MB binary",
			Why:    "CPU grows with memory: 256 MB starts faster than 128 MB, and the API server waits at most 2 s"},
		FnRotation: {PeakMiB: 24, Estimate: true, SettingMB: 128,
			Source: "estimate: four Secrets Manager calls per rotation, independent of the cluster's size; a 9 MB binary"},
	}
}

// RequiredMemoryMB is the headroom rule's smallest setting for a peak.
func RequiredMemoryMB(peakMiB int) int {
	mb := int(math.Ceil(MemoryHeadroom*float64(peakMiB)/MemoryStepMB)) * MemoryStepMB
	return max(mb, lambdaMinMemory)
}

// GoMemLimit is the GOMEMLIMIT value for a memory setting: 90% of it, in
// whole MiB.
func GoMemLimit(settingMB int) string {
	return fmt.Sprintf("%dMiB", int(goMemLimitFactor*float64(settingMB)))
}

// memoryMB is a function's setting from the table.
func memoryMB(fn string) int { return MemoryTable()[fn].SettingMB }
