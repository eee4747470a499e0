package stack

import _ "embed"

// grafanaDashboard is a dashboard for Grafana's CloudWatch data source
// over Karpenter's metric names (and some of Nodewright's own), as the
// functions emit them: import it into Grafana beside the CloudWatch
// dashboard the stack creates. Its variables pick the data source, the
// region, the namespace (Nodewright unless the stack overrides it) and
// the cluster.
//
//go:embed grafana/karpenter.json
var grafanaDashboard []byte

// GrafanaDashboard returns the Grafana dashboard's JSON.
func GrafanaDashboard() []byte { return append([]byte(nil), grafanaDashboard...) }
