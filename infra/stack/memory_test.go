package stack

import (
	"strconv"
	"strings"
	"testing"
)

func TestRequiredMemoryMB(t *testing.T) {
	for _, tc := range []struct{ peak, want int }{
		{1434, 2176}, // 1.5 x 1,434 = 2,151 -> the next multiple of 64
		{1365, 2048}, // 2,047.5 -> 2,048 exactly
		{1366, 2112}, // 2,049 -> 2,112
		{100, 192},   // 150 -> 192
		{32, 128},    // 48 -> 64, under Lambda's minimum of 128
		{0, 128},
	} {
		if got := RequiredMemoryMB(tc.peak); got != tc.want {
			t.Errorf("RequiredMemoryMB(%d) = %d, want %d", tc.peak, got, tc.want)
		}
	}
	if got := GoMemLimit(2176); got != "1958MiB" {
		t.Errorf("GoMemLimit(2176) = %s, want 1958MiB", got)
	}
}

// Every function has a row; each setting satisfies the headroom rule, is
// a setting Lambda accepts, and is the one the stack gives the function.
func TestMemoryTableRule(t *testing.T) {
	table := MemoryTable()
	for _, fn := range FunctionNames() {
		row, ok := table[fn]
		if !ok {
			t.Errorf("%s: no row in MemoryTable", fn)
			continue
		}
		req := RequiredMemoryMB(row.PeakMiB)
		switch {
		case row.PeakMiB <= 0 || row.Source == "":
			t.Errorf("%s: peak %d MiB from %q: a row needs both", fn, row.PeakMiB, row.Source)
		case row.SettingMB < req:
			t.Errorf("%s: setting %d MB under the rule's %d MB (%.1f x %d MiB, rounded up to %d)", fn, row.SettingMB, req, MemoryHeadroom, row.PeakMiB, MemoryStepMB)
		case row.SettingMB > req && row.Why == "":
			t.Errorf("%s: setting %d MB above the rule's %d MB without a reason", fn, row.SettingMB, req)
		case row.SettingMB%MemoryStepMB != 0 || row.SettingMB > lambdaMaxMemory:
			t.Errorf("%s: setting %d MB is not a multiple of %d up to %d", fn, row.SettingMB, MemoryStepMB, lambdaMaxMemory)
		case row.Estimate != strings.HasPrefix(row.Source, "estimate"):
			t.Errorf("%s: Estimate %v but source %q", fn, row.Estimate, row.Source)
		}
		if Settings()[fn].MemoryMB != row.SettingMB {
			t.Errorf("%s: Settings gives %d MB, the table %d", fn, Settings()[fn].MemoryMB, row.SettingMB)
		}
	}
	if len(table) != len(FunctionNames()) {
		t.Errorf("MemoryTable has %d rows for %d functions", len(table), len(FunctionNames()))
	}
}

// The template gives each function its setting and a GOMEMLIMIT below it.
func TestGoMemLimitInTemplate(t *testing.T) {
	s := defaultStack(t)
	for _, fn := range FunctionNames() {
		p := s.one(t, "AWS::Lambda::Function", title(fn))
		setting := MemoryTable()[fn].SettingMB
		if p["MemorySize"] != float64(setting) {
			t.Errorf("%s: MemorySize %v, want %d", fn, p["MemorySize"], setting)
		}
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		v, _ := env[envGoMemLimit].(string)
		mib, err := strconv.Atoi(strings.TrimSuffix(v, "MiB"))
		if err != nil || !strings.HasSuffix(v, "MiB") || mib >= setting || mib < setting*85/100 {
			t.Errorf("%s: %s=%q, want about 90%% of %d MiB and below it", fn, envGoMemLimit, v, setting)
		}
	}
}
