package stack

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/metrics"
)

// karpenterName reports whether name is one of Karpenter's metrics that
// Nodewright emits.
func karpenterName(name string) bool {
	for _, d := range metrics.KarpenterDefinitions() {
		if d.Name == name {
			return true
		}
	}
	return false
}

// grafanaQuery is one CloudWatch metric query of the Grafana dashboard.
type grafanaQuery struct {
	Panel      string
	Namespace  string            `json:"namespace"`
	MetricName string            `json:"metricName"`
	Dimensions map[string]string `json:"dimensions"`
	MatchExact bool              `json:"matchExact"`
	Statistic  string            `json:"statistic"`
	QueryMode  string            `json:"queryMode"`
}

// grafanaQueries returns the dashboard's queries with its variables'
// values substituted into the namespace, and the dashboard's variables.
func grafanaQueries(body []byte) ([]grafanaQuery, map[string]string, error) {
	var dash struct {
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string         `json:"title"`
			Type    string         `json:"type"`
			Targets []grafanaQuery `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(body, &dash); err != nil {
		return nil, nil, err
	}
	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "custom" {
			vars[v.Name] = q
		} else {
			vars[v.Name] = "*"
		}
	}
	var out []grafanaQuery
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			q.Panel = p.Title
			q.Namespace = strings.TrimPrefix(q.Namespace, "$")
			if v, ok := vars[q.Namespace]; ok {
				q.Namespace = v
			}
			out = append(out, q)
		}
	}
	return out, vars, nil
}

// percentile is a CloudWatch percentile statistic.
var percentile = regexp.MustCompile(`^p\d{1,2}(\.\d+)?$`)

// checkGrafana lists what the dashboard's queries get wrong against the
// emitted metrics: a query of another namespace, of a metric no code path
// emits or that has no definition, of dimensions it is not published
// under, or with a statistic that does not fit; an emitted Karpenter metric
// no query graphs.
func checkGrafana(queries []grafanaQuery, emitted map[string][]string) []string {
	var out []string
	graphed := map[string]bool{}
	for _, q := range queries {
		at := fmt.Sprintf("panel %q, %s", q.Panel, q.MetricName)
		if q.QueryMode != "Metrics" || q.Namespace != metrics.Namespace {
			out = append(out, fmt.Sprintf("%s: a %s query of namespace %q; want a Metrics query of %s", at, q.QueryMode, q.Namespace, metrics.Namespace))
			continue
		}
		def, ok := metrics.Lookup(q.MetricName)
		if !ok {
			out = append(out, at+": no such metric")
			continue
		}
		if emitted[q.MetricName] == nil {
			out = append(out, at+": no code path emits it")
		}
		graphed[q.MetricName] = true
		keys := slices.Sorted(maps.Keys(q.Dimensions))
		match := false
		for _, set := range def.DimensionSets() {
			if slices.Equal(keys, slices.Sorted(slices.Values(set))) {
				match = true
			}
		}
		if !q.MatchExact || !match {
			out = append(out, fmt.Sprintf("%s: dimensions %v (match exact %v); the metric is published under %v", at, keys, q.MatchExact, def.DimensionSets()))
		}
		if q.Statistic != string(def.Statistic) && !(def.Unit == metrics.UnitSeconds && percentile.MatchString(q.Statistic)) {
			out = append(out, fmt.Sprintf("%s: statistic %s; the metric's is %s (or a percentile, for a duration)", at, q.Statistic, def.Statistic))
		}
	}
	for _, d := range metrics.KarpenterDefinitions() {
		if emitted[d.Name] != nil && !graphed[d.Name] {
			out = append(out, fmt.Sprintf("%s is emitted (%s) but the Grafana dashboard does not graph it", d.Name, strings.Join(emitted[d.Name], ", ")))
		}
	}
	return out
}

// The Grafana dashboard graphs only what the functions emit, under the
// namespace, names and dimensions they emit it with, and graphs every
// Karpenter metric they emit.
func TestGrafanaDashboardMatchesWhatIsEmitted(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	consts, err := metricConstants(filepath.Join(root, "shared", "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	emitted, problems, err := emittedMetrics(root, consts, "shared", "functions")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	queries, vars, err := grafanaQueries(GrafanaDashboard())
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < 10 {
		t.Fatalf("the dashboard has only %d queries: its shape changed?", len(queries))
	}
	for _, v := range []string{"datasource", "region", "namespace", "cluster"} {
		if _, ok := vars[v]; !ok {
			t.Errorf("the dashboard has no %s variable", v)
		}
	}
	for _, p := range checkGrafana(queries, emitted) {
		t.Error(p)
	}
}

// The check fails a query of the wrong namespace, of a metric not emitted,
// of dimensions the metric is not published under, with a counter's
// statistic wrong, and a Karpenter metric emitted but not graphed.
func TestCheckGrafanaFindsMismatches(t *testing.T) {
	q := func(name, stat string, dims map[string]string) grafanaQuery {
		return grafanaQuery{Panel: "p", QueryMode: "Metrics", Namespace: metrics.Namespace, MetricName: name, Dimensions: dims, MatchExact: true, Statistic: stat}
	}
	cl := map[string]string{metrics.DimCluster: "$cluster"}
	emitted := map[string][]string{}
	for _, d := range metrics.KarpenterDefinitions() {
		emitted[d.Name] = []string{"x.go:1"}
	}
	emitted[metrics.Nodes] = []string{"y.go:2"}
	good := []grafanaQuery{
		q(metrics.KarpenterPodsStartupDuration, "p99", cl),
		q(metrics.KarpenterNodesCreated, "Sum", map[string]string{metrics.DimCluster: "c", metrics.LabelNodePool: "*", metrics.LabelZone: "*"}),
	}
	bad := []grafanaQuery{
		{Panel: "p", QueryMode: "Metrics", Namespace: "Other", MetricName: metrics.Nodes},
		q(metrics.PendingPods, "Maximum", cl),
		q(metrics.KarpenterNodesCreated, "Sum", map[string]string{metrics.DimCluster: "c", metrics.LabelNodePool: "*"}),
		q(metrics.KarpenterCloudProviderErrors, "p99", cl),
	}
	got := strings.Join(checkGrafana(append(good, bad...), emitted), "\n")
	for _, want := range []string{
		`a Metrics query of namespace "Other"`,
		"PendingPods: no code path emits it",
		"karpenter_nodes_created_total: dimensions [ClusterName nodepool]",
		"karpenter_cloudprovider_errors_total: statistic p99",
		metrics.KarpenterNodePoolsUsage + " is emitted (x.go:1) but the Grafana dashboard does not graph it",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the check lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, metrics.KarpenterPodsStartupDuration+": ") {
		t.Errorf("a percentile of a duration is refused:\n%s", got)
	}
}
