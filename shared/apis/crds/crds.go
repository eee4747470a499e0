// Package crds holds the CustomResourceDefinitions of NodePool
// (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1) and NodeOverlay
// (karpenter.sh/v1alpha1) generated from
// Nodewright's API types (shared/apis/internal/crdgen explains how they stay
// compatible with Karpenter's own), and of NodeClaim (karpenter.sh/v1),
// generated from Karpenter's own Go types, for the objects Nodewright keeps
// one per node record. A cluster that runs Karpenter keeps
// Karpenter's CRDs; one that never did installs these to `kubectl apply` its
// NodePools as Karpenter users do.
package crds

import (
	"embed"
	"sort"
)

//go:generate go run ../internal/crdgen/crd-gen .

//go:embed *.yaml
var files embed.FS

// Files returns each CRD's YAML by file name.
func Files() map[string][]byte {
	entries, _ := files.ReadDir(".")
	out := map[string][]byte{}
	for _, e := range entries {
		b, _ := files.ReadFile(e.Name())
		out[e.Name()] = b
	}
	return out
}

// Names lists the file names, sorted.
func Names() []string {
	var out []string
	for n := range Files() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
