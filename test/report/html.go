package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
)

//go:embed report.html.tmpl
var htmlTemplate string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"secs":  func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"price": func(f float64) string { return fmt.Sprintf("$%.4f", f) },
}).Parse(htmlTemplate))

// chartData is what the page's script draws: one series per line, all on
// the samples' times.
type chartData struct {
	Times  []float64     `json:"times"`
	Charts []chartSeries `json:"charts"`
}

type chartSeries struct {
	ID     string      `json:"id"`
	Title  string      `json:"title"`
	Unit   string      `json:"unit"`
	Series []oneSeries `json:"series"`
}

type oneSeries struct {
	Name   string    `json:"name"`
	Color  string    `json:"color"`
	Values []float64 `json:"values"`
}

// Charts lists the ids of the charts the page draws.
var Charts = []string{"chart-pods", "chart-nodes", "chart-price"}

func (r *Report) charts() chartData {
	d := chartData{Times: []float64{}}
	pending, running, spot, od, price := []float64{}, []float64{}, []float64{}, []float64{}, []float64{}
	for _, s := range r.Samples {
		d.Times = append(d.Times, s.Time)
		pending = append(pending, float64(s.PodsPending))
		running = append(running, float64(s.PodsRunning))
		spot = append(spot, float64(s.NodesSpot))
		od = append(od, float64(s.NodesOnDemand))
		price = append(price, s.PricePerHour)
	}
	d.Charts = []chartSeries{
		{ID: Charts[0], Title: "Pods", Unit: "pods", Series: []oneSeries{{"pending", "#d9534f", pending}, {"running", "#5cb85c", running}}},
		{ID: Charts[1], Title: "Nodes by capacity type", Unit: "nodes", Series: []oneSeries{{"spot", "#f0ad4e", spot}, {"on-demand", "#337ab7", od}}},
		{ID: Charts[2], Title: "Price per hour", Unit: "$/h", Series: []oneSeries{{"price per hour", "#6f42c1", price}}},
	}
	return d
}

// HTML is report.html: self-contained (inline style and script, no
// network); the script draws the charts as SVG from the samples.
func (r *Report) HTML() ([]byte, error) {
	var b bytes.Buffer
	if err := page.Execute(&b, struct {
		*Report
		Data chartData
	}{r, r.charts()}); err != nil {
		return nil, fmt.Errorf("report.html: %w", err)
	}
	return b.Bytes(), nil
}
