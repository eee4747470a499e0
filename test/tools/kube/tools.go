//go:build tools

// Package kube pins the Kubernetes control-plane commands that the local cloud
// runs. build.sh builds k8s.io/kubernetes/cmd/{kube-apiserver,
// kube-controller-manager,kube-scheduler} from this module; the blank imports
// keep their packages in go.mod and go.sum.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)
