package cost

import "testing"

func TestFromPasses(t *testing.T) {
	passes := []Pass{
		{Function: "provision", Kind: "sweep", PerMonth: MinutesPerMonth, BilledMillis: 1000, ReadUnits: 10, WriteUnits: 2, LogBytes: 1000},
		{Function: "consolidation", Kind: "tick", PerMonth: MinutesPerMonth / 5, BilledMillis: 5000, ReadUnits: 20, WriteUnits: 1, LogBytes: 3000},
		{Function: "provision", Kind: "hint", PerMonth: MinutesPerMonth * 3, BilledMillis: 200, ReadUnits: 1, WriteUnits: 4, LogBytes: 600},
	}
	mem := map[string]int{"provision": 2176, "consolidation": 2176}
	u := FromPasses(passes, mem, Usage{TableGB: 0.5, Alarms: 13, ReadUnits: 99})
	if len(u.Functions) != 2 || u.TableGB != 0.5 || u.Alarms != 13 {
		t.Fatalf("usage %+v", u)
	}
	p, c := u.Functions[0], u.Functions[1]
	// provision: 43,800 sweeps and 131,400 hints; mean (1,000 + 3 x 200) / 4 = 400 ms,
	// log (1,000 + 3 x 600) / 4 = 700 bytes.
	if p.Name != "provision" || p.Invocations != 175200 || !near(p.MeanBilledMillis, 400) || !near(p.LogBytes, 700) || p.MemoryMB != 2176 {
		t.Errorf("provision %+v", p)
	}
	if c.Name != "consolidation" || c.Invocations != 8760 || c.MeanBilledMillis != 5000 || c.LogBytes != 3000 {
		t.Errorf("consolidation %+v", c)
	}
	// reads: 43,800 x 10 + 8,760 x 20 + 131,400 x 1 = 744,600 (the given 99 replaced);
	// writes: 43,800 x 2 + 8,760 x 1 + 131,400 x 4 = 621,960.
	if u.ReadUnits != 744600 || u.WriteUnits != 621960 {
		t.Errorf("units %v read, %v write; want 744,600 and 621,960", u.ReadUnits, u.WriteUnits)
	}
	if _, err := Monthly(u, USEast1); err != nil {
		t.Error(err)
	}
}
