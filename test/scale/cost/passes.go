package cost

// Pass is what the benchmark measures of one kind of invocation at the
// design point, and how often it happens in a month.
type Pass struct {
	Function string // the function it runs in
	Kind     string // e.g. "sweep", "hint", "tick", "spot warning"
	PerMonth float64
	// BilledMillis, ReadUnits, WriteUnits and LogBytes are per invocation:
	// its wall time, the DynamoDB units the front metered during it, and
	// its log group bytes.
	BilledMillis          float64
	ReadUnits, WriteUnits float64
	LogBytes              float64
}

// MinutesPerMonth is AWS's month, 730 hours, in minutes: the invocations a
// one-minute schedule makes.
const MinutesPerMonth = 730 * 60

// FromPasses is the month's usage of the measured passes: each function's
// invocations, mean billed duration and log bytes (weighted by how often
// each pass runs), at its memory setting, and the DynamoDB units summed;
// rest (storage, metrics, alarms, dashboards, retention) is kept as given.
// A function with no pass is left out.
func FromPasses(passes []Pass, memoryMB map[string]int, rest Usage) Usage {
	u := rest
	u.Functions = nil
	u.ReadUnits, u.WriteUnits = 0, 0
	index := map[string]int{}
	for _, p := range passes {
		i, ok := index[p.Function]
		if !ok {
			i = len(u.Functions)
			index[p.Function] = i
			u.Functions = append(u.Functions, Function{Name: p.Function, MemoryMB: memoryMB[p.Function]})
		}
		f := &u.Functions[i]
		total := f.Invocations + p.PerMonth
		if total > 0 {
			f.MeanBilledMillis = (f.MeanBilledMillis*f.Invocations + p.BilledMillis*p.PerMonth) / total
			f.LogBytes = (f.LogBytes*f.Invocations + p.LogBytes*p.PerMonth) / total
		}
		f.Invocations = total
		u.ReadUnits += p.PerMonth * p.ReadUnits
		u.WriteUnits += p.PerMonth * p.WriteUnits
	}
	return u
}
