// Package kubeconfig reads a client configuration from a kubeconfig file, for
// running the functions' code outside AWS (the CLI, the local cloud). It is
// apart from package eksauth so that Lambda binaries, which never read a
// kubeconfig, do not link client-go's kubeconfig loader (about 2 MB).
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Load reads the kubeconfig at path (its current context).
func Load(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
