package cost

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/nodewright/nodewright/shared/metrics"
)

// What the stack creates in CloudWatch (infra/stack/observability.go):
// one dashboard, and these alarms: the interruption DLQ, launch failures
// and the oldest pending pod, plus errors and throttles for each function.
const (
	Dashboards          = 1
	alarmsPerFunction   = 2
	alarmsOfTheStack    = 3
	functionsOfTheStack = 5 // provision, interruption, consolidation, webhook, rotation
)

// Alarms is the stack's alarm count (each a standard-resolution alarm on
// one metric).
func Alarms() int { return alarmsOfTheStack + alarmsPerFunction*functionsOfTheStack }

// Series is how many custom metric series the definitions publish when
// each dimension key takes values[key] distinct values in the month: every
// data point goes under {ClusterName} alone and, for a metric with Detail
// keys, under {ClusterName, Detail...} too (metrics.Definition). A key
// with no count is an error: the count is an input, not a guess.
func Series(defs []metrics.Definition, values map[string]int) (int, error) {
	n := 0
	for _, d := range defs {
		n++ // {ClusterName}
		if len(d.Detail) == 0 {
			continue
		}
		combos := 1
		for _, k := range d.Detail {
			v, ok := values[k]
			if !ok {
				return 0, fmt.Errorf("metric %s: no count of dimension %s's values", d.Name, k)
			}
			combos *= v
		}
		n += combos
	}
	return n, nil
}

// DetailKeys are the dimension keys the definitions break down by, each
// once, in the order first met.
func DetailKeys(defs []metrics.Definition) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range defs {
		for _, k := range d.Detail {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// EMFBytesPerPoint is the mean size of one data point's EMF record as the
// functions' emitter writes it (a log line in the function's log group,
// billed as log ingestion), over every definition, each dimension value
// being valueLen bytes long.
func EMFBytesPerPoint(defs []metrics.Definition, cluster string, valueLen int) (float64, error) {
	var buf bytes.Buffer
	at := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	e := metrics.NewEmitter(&buf, metrics.Namespace, cluster, func() time.Time { return at })
	for _, d := range defs {
		dims := metrics.Dims{}
		for _, k := range d.Detail {
			dims[k] = strings.Repeat("v", valueLen)
		}
		if err := e.Emit(d.Name, 12345, dims); err != nil {
			return 0, err
		}
	}
	if len(defs) == 0 {
		return 0, nil
	}
	return float64(buf.Len()) / float64(len(defs)), nil
}

// DesignPointValues are estimates of how many values each dimension key
// takes in a month at 5,000 nodes and 150,000 pods: 4 NodePools, 3
// capacity types (spot, on-demand, reserved), 40 instance types launched,
// 6 zones (us-east-1), 6 reasons (the most any reason-keyed metric sees:
// EC2 error codes, eviction and abandonment causes), 2 consolidation
// methods (delete, replace), 5 interruption kinds, and for Karpenter's
// metrics 2 controllers, 6 cloud-provider methods, 1 provider, 4 error
// kinds, 5 message types, 2 min-values states, 2 repair conditions, 3
// images, 4 resource types (cpu, memory, pods, nodes), 3 decisions and 3
// consolidation types. A series is billed for the hours it has data, so
// counting every combination for the whole month is an upper bound; the
// benchmark's run counts the series it saw.
var DesignPointValues = map[string]int{
	metrics.DimNodePool: 4, metrics.DimCapacityType: 3, metrics.DimInstanceType: 40, metrics.DimReason: 6,
	metrics.DimMethod: 2, metrics.DimKind: 5,
	metrics.LabelNodePool: 4, metrics.LabelCapacityType: 3, metrics.LabelZone: 6, metrics.LabelReason: 6,
	metrics.LabelMinValuesRelaxed: 2, metrics.LabelResourceType: 4, metrics.LabelController: 2,
	metrics.LabelMessageType: 5, metrics.LabelDecision: 3, metrics.LabelConsolidationType: 3,
	metrics.LabelMethod: 6, metrics.LabelProvider: 1, metrics.LabelError: 4, metrics.LabelCondition: 2,
	metrics.LabelImageID: 3,
}

// FunctionLogBytes are the functions' own JSON log lines per invocation,
// measured in one `make run` of test/scenarios/default.yaml on 2026-11-27
// (its functions.log: 184 lines, 49,943 bytes; invocations counted by
// request id, the webhook's by its one line per call): provision 12,574
// bytes over 7 invocations, consolidation 16,270 over 10, interruption
// 5,029 over 2, webhook 16,063 over 60. A small cluster's figures: a
// function logs per action, not per pod, so they are the reference until
// `make bench-scale` counts its own. They leave out Lambda's platform
// records (PlatformLogBytes) and the EMF records (EMFBytesPerPoint times
// the data points an invocation emits).
var FunctionLogBytes = map[string]float64{
	"provision":     12574.0 / 7,
	"consolidation": 16270.0 / 10,
	"interruption":  5029.0 / 2,
	"webhook":       16063.0 / 60,
}

// PlatformLogBytes is an estimate of what Lambda itself writes to a JSON-format
// log group per invocation: its platform.start and platform.report records.
const PlatformLogBytes = 600
