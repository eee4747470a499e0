package kube

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

const goodPool = `{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"default","resourceVersion":"5","uid":"u",
 "managedFields":[{"manager":"kubectl"}]},"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},
 "requirements":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}]}}},"status":{"somethingNew":1}}`

const badPool = `{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"bad"},"spec":{"weight":0,"template":{"spec":{
 "nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]}}}}`

func TestNodePools(t *testing.T) {
	for _, c := range []struct {
		name       string
		pools      func(w http.ResponseWriter)
		installed  bool
		valid      int
		invalid    string
		classesErr bool
	}{
		{"not installed", func(w http.ResponseWriter) { writeStatus(w, 404, metav1.StatusReasonNotFound, "404 page not found") }, false, 0, "", false},
		{"valid and invalid", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePoolList","metadata":{},"items":[` + goodPool + `,` + badPool + `]}`))
		}, true, 1, "cluster: NodePool bad: spec.weight: ", false},
		{"not readable", func(w http.ResponseWriter) { writeStatus(w, 403, metav1.StatusReasonForbidden, "forbidden") }, false, 0, "NodePool objects not readable", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &recorder{handle: func(w http.ResponseWriter, r *http.Request, n int) {
				if strings.HasSuffix(r.URL.Path, "/nodepools") {
					if r.Header.Get("Accept") != "application/json" {
						t.Errorf("Accept %q", r.Header.Get("Accept"))
					}
					c.pools(w)
					return
				}
				_, _ = w.Write([]byte(`{"apiVersion":"karpenter.k8s.aws/v1","kind":"EC2NodeClassList","metadata":{},"items":[]}`))
			}}
			cfg, installed, invalid, err := newClient(t, f).NodePools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if installed != c.installed || len(cfg.NodePools) != c.valid {
				t.Fatalf("installed %v, %d valid", installed, len(cfg.NodePools))
			}
			if c.valid > 0 && (cfg.NodePools[0].Name != "default" || cfg.NodePools[0].Spec.Disruption.ConsolidationPolicy == "") {
				t.Errorf("pool not defaulted: %+v", cfg.NodePools[0].Spec.Disruption)
			}
			if (invalid == nil) != (c.invalid == "") || invalid != nil && !strings.Contains(invalid.Error(), c.invalid) {
				t.Fatalf("invalid %v, want %q", invalid, c.invalid)
			}
			var list apis.Errors
			if c.valid > 0 && (!errors.As(invalid, &list) || len(list) != 1) {
				t.Errorf("invalid is %T", invalid)
			}
		})
	}
}

// NodeOverlays applied to the cluster are read with the NodePools: the
// valid ones returned, the invalid ones named; a cluster that does not
// serve them reads none and reports nothing.
func TestNodeOverlays(t *testing.T) {
	const good = `{"apiVersion":"karpenter.sh/v1alpha1","kind":"NodeOverlay","metadata":{"name":"savings"},"spec":{"priceAdjustment":"-10%","weight":5}}`
	const bad = `{"apiVersion":"karpenter.sh/v1alpha1","kind":"NodeOverlay","metadata":{"name":"bad"},"spec":{"price":"cheap"}}`
	for _, c := range []struct {
		name     string
		overlays func(w http.ResponseWriter)
		valid    int
		invalid  string
	}{
		{"not served", func(w http.ResponseWriter) { writeStatus(w, 404, metav1.StatusReasonNotFound, "404 page not found") }, 0, ""},
		{"valid and invalid", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"apiVersion":"karpenter.sh/v1alpha1","kind":"NodeOverlayList","metadata":{},"items":[` + good + `,` + bad + `]}`))
		}, 1, `cluster: NodeOverlay bad: spec.price: "cheap" must be a non-negative price`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &recorder{handle: func(w http.ResponseWriter, r *http.Request, n int) {
				switch {
				case r.URL.Path == "/apis/karpenter.sh/v1alpha1/nodeoverlays":
					c.overlays(w)
				case strings.HasSuffix(r.URL.Path, "/nodepools"):
					_, _ = w.Write([]byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePoolList","metadata":{},"items":[` + goodPool + `]}`))
				default:
					_, _ = w.Write([]byte(`{"apiVersion":"karpenter.k8s.aws/v1","kind":"EC2NodeClassList","metadata":{},"items":[]}`))
				}
			}}
			cfg, _, invalid, err := newClient(t, f).NodePools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.NodeOverlays) != c.valid || c.valid > 0 && *cfg.NodeOverlays[0].Spec.PriceAdjustment != "-10%" {
				t.Fatalf("overlays %+v", cfg.NodeOverlays)
			}
			if (invalid == nil) != (c.invalid == "") || invalid != nil && !strings.Contains(invalid.Error(), c.invalid) {
				t.Fatalf("invalid %v, want %q", invalid, c.invalid)
			}
		})
	}
}
