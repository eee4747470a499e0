package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sync"
	"time"
)

// Emitter writes data points as EMF records, one JSON object per line. Lambda
// sends a function's stdout to its log group, where CloudWatch extracts the
// metrics; nothing else is needed. Safe for concurrent use.
type Emitter struct {
	mu        sync.Mutex
	w         io.Writer
	namespace string
	cluster   string
	now       func() time.Time
}

// NewEmitter returns an Emitter that writes to w (os.Stdout in a function)
// under namespace (Namespace unless overridden) for cluster, stamping records
// with now().
func NewEmitter(w io.Writer, namespace, cluster string, now func() time.Time) *Emitter {
	if namespace == "" {
		namespace = Namespace
	}
	return &Emitter{w: w, namespace: namespace, cluster: cluster, now: now}
}

// Discard drops every data point: what a flow emits to when it is given no
// Emitter (tests, tools).
type Discard struct{}

// Emit drops the data point.
func (Discard) Emit(string, float64, Dims) error { return nil }

// Dims are a data point's dimension values beyond the cluster, keyed by
// dimension key (DimNodePool, DimReason, ...).
type Dims map[string]string

// Emit writes one data point of the metric called name. dims must hold a
// non-empty value for each of the metric's Detail keys and nothing else; an
// unknown metric, a missing or extra dimension, or a value that is not finite
// is an error and nothing is written.
func (e *Emitter) Emit(name string, value float64, dims Dims) error {
	def, err := check(name, value, dims)
	if err != nil {
		return err
	}
	if e.cluster == "" {
		return fmt.Errorf("emit %s: no cluster name", name)
	}
	rec := map[string]any{DimCluster: e.cluster}
	for _, k := range def.Detail {
		rec[k] = dims[k]
	}
	rec[name] = value
	rec["_aws"] = emfMeta{
		Timestamp: e.now().UnixMilli(),
		CloudWatchMetrics: []emfDirective{{
			Namespace:  e.namespace,
			Dimensions: def.DimensionSets(),
			Metrics:    []emfMetric{{Name: name, Unit: string(def.Unit)}},
		}},
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("emit %s: %w", name, err)
	}
	line = append(line, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.w.Write(line); err != nil {
		return fmt.Errorf("emit %s: %w", name, err)
	}
	return nil
}

// check returns the definition of the metric called name if a data point
// of value with dims is one Emit writes.
func check(name string, value float64, dims Dims) (Definition, error) {
	def, ok := Lookup(name)
	if !ok {
		return def, fmt.Errorf("emit %s: unknown metric", name)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return def, fmt.Errorf("emit %s: value %v is not finite", name, value)
	}
	if len(dims) != len(def.Detail) {
		return def, fmt.Errorf("emit %s: dimensions %v, want exactly %v", name, slices.Sorted(maps.Keys(dims)), def.Detail)
	}
	for _, k := range def.Detail {
		if dims[k] == "" {
			return def, fmt.Errorf("emit %s: dimension %s missing or empty", name, k)
		}
	}
	return def, nil
}

// Recorder keeps the data points it is given, refusing those an Emitter
// refuses: what tests of the code that emits use in its place. Safe for
// concurrent use.
type Recorder struct {
	mu     sync.Mutex
	points []Point
}

// Point is one data point a Recorder kept.
type Point struct {
	Name  string
	Value float64
	Dims  Dims
}

// Emit keeps the data point, or returns the error an Emitter would.
func (r *Recorder) Emit(name string, value float64, dims Dims) error {
	if _, err := check(name, value, dims); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.points = append(r.points, Point{Name: name, Value: value, Dims: maps.Clone(dims)})
	return nil
}

// Points returns the kept points of the metric called name, in the order
// they came.
func (r *Recorder) Points(name string) []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Point
	for _, p := range r.points {
		if p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}
