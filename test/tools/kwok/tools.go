//go:build tools

// Package kwok pins kwok, the fake kubelet of the local cloud. build.sh builds
// sigs.k8s.io/kwok/cmd/kwok from this module and copies the stage files that
// ship in the same module version (kustomize/stage).
package kwok

import (
	_ "sigs.k8s.io/kwok/pkg/kwok/cmd"
)
