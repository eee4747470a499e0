package crdgen

// The generator type-checks Karpenter's v1 package from source; importing
// it here keeps that package's dependencies in go.mod and go.sum (go mod
// tidy keeps only what some package imports). crdgen runs under go generate
// and tests only: no function links it.
import _ "sigs.k8s.io/karpenter/pkg/apis/v1"
