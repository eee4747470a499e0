package apis

import "k8s.io/apimachinery/pkg/api/equality"

// equalValues compares with Kubernetes' semantic equality (quantities by
// value, times by instant).
func equalValues(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }
