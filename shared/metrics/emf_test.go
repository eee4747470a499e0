package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func fixedClock() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }

func TestEmitWritesEMF(t *testing.T) {
	var buf bytes.Buffer
	e := NewEmitter(&buf, "", "prod", fixedClock)
	if err := e.Emit(NodeClaimsLaunched, 3, Dims{DimNodePool: "default", DimCapacityType: "spot", DimInstanceType: "m7g.large"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(buf.String(), "\n") || strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("want one line, got %q", buf.String())
	}
	var rec struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		ClusterName, NodePool, CapacityType string
		NodeClaimsLaunched                  float64
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.AWS.Timestamp != fixedClock().UnixMilli() {
		t.Errorf("timestamp %d", rec.AWS.Timestamp)
	}
	d := rec.AWS.CloudWatchMetrics
	if len(d) != 1 || d[0].Namespace != Namespace {
		t.Fatalf("directive %+v", d)
	}
	wantDims := [][]string{{DimCluster}, {DimCluster, DimNodePool, DimCapacityType, DimInstanceType}}
	if got, _ := json.Marshal(d[0].Dimensions); string(got) != mustJSON(wantDims) {
		t.Errorf("dimensions %s", got)
	}
	if len(d[0].Metrics) != 1 || d[0].Metrics[0].Name != NodeClaimsLaunched || d[0].Metrics[0].Unit != "Count" {
		t.Errorf("metrics %+v", d[0].Metrics)
	}
	if rec.ClusterName != "prod" || rec.NodePool != "default" || rec.CapacityType != "spot" || rec.NodeClaimsLaunched != 3 {
		t.Errorf("values %+v", rec)
	}
}

func TestEmitClusterOnlyMetric(t *testing.T) {
	var buf bytes.Buffer
	e := NewEmitter(&buf, "Custom", "c1", fixedClock)
	if err := e.Emit(PendingPodOldestAge, 42.5, nil); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{`"Namespace":"Custom"`, `"Dimensions":[["ClusterName"]]`, `"PendingPodOldestAgeSeconds":42.5`, `"Unit":"Seconds"`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s missing from %s", want, s)
		}
	}
}

func TestEmitRejects(t *testing.T) {
	cases := []struct {
		name, metric, cluster string
		value                 float64
		dims                  Dims
		want                  string
	}{
		{"unknown metric", "Nope", "c", 1, nil, "unknown metric"},
		{"missing dimension", Interruptions, "c", 1, nil, "want exactly [Kind]"},
		{"empty dimension", Interruptions, "c", 1, Dims{DimKind: ""}, "Kind missing or empty"},
		{"wrong dimension", Interruptions, "c", 1, Dims{DimReason: "x"}, "Kind missing or empty"},
		{"extra dimension", PendingPods, "c", 1, Dims{DimNodePool: "x"}, "dimensions [NodePool], want exactly []"},
		{"NaN", PendingPods, "c", math.NaN(), nil, "not finite"},
		{"Inf", PendingPods, "c", math.Inf(1), nil, "not finite"},
		{"no cluster", PendingPods, "", 1, nil, "no cluster"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := NewEmitter(&buf, "", tc.cluster, fixedClock).Emit(tc.metric, tc.value, tc.dims)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %q on error", buf.String())
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestEmitWriteError(t *testing.T) {
	err := NewEmitter(failingWriter{}, "", "c", fixedClock).Emit(PendingPods, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err %v", err)
	}
}

func TestDefinitions(t *testing.T) {
	defs := Definitions()
	seen := map[string]bool{}
	for i, d := range defs {
		if seen[d.Name] {
			t.Errorf("duplicate %s", d.Name)
		}
		seen[d.Name] = true
		if i > 0 && defs[i-1].Name >= d.Name {
			t.Errorf("not sorted at %s", d.Name)
		}
		if d.Unit == "" || d.Statistic == "" || d.Description == "" {
			t.Errorf("%s incomplete: %+v", d.Name, d)
		}
		for _, k := range d.Detail {
			if k == DimCluster {
				t.Errorf("%s lists %s in Detail", d.Name, DimCluster)
			}
		}
		if got, ok := Lookup(d.Name); !ok || got.Name != d.Name {
			t.Errorf("Lookup(%s) = %v, %v", d.Name, got, ok)
		}
	}
	defs[0].Name = "mutated"
	if Definitions()[0].Name == "mutated" {
		t.Error("Definitions shares its slice")
	}
	if _, ok := Lookup("missing"); ok {
		t.Error("Lookup(missing) found something")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func BenchmarkEmit(b *testing.B) {
	var buf bytes.Buffer
	e := NewEmitter(&buf, "", "c", fixedClock)
	dims := Dims{DimNodePool: "default", DimCapacityType: "spot"}
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := e.Emit(Nodes, 12, dims); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRecorderChecksAsEmitDoes(t *testing.T) {
	var r Recorder
	if err := r.Emit(KarpenterNodesCreated, 1, Dims{LabelNodePool: "default", LabelZone: "us-east-1a"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		dims Dims
	}{
		{KarpenterNodesCreated, Dims{LabelNodePool: "default"}},
		{KarpenterNodesCreated, Dims{LabelNodePool: "default", LabelZone: ""}},
		{"karpenter_nope", nil},
	} {
		if err := r.Emit(bad.name, 1, bad.dims); err == nil {
			t.Errorf("Recorder took %s %v", bad.name, bad.dims)
		}
	}
	got := r.Points(KarpenterNodesCreated)
	if len(got) != 1 || got[0].Dims[LabelZone] != "us-east-1a" || got[0].Value != 1 {
		t.Errorf("points %+v", got)
	}
}
