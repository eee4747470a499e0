// Command crd-gen writes the NodePool and EC2NodeClass CRDs generated from
// shared/apis into the directory given (go generate runs it in shared/apis/crds).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodewright/nodewright/shared/apis/internal/crdgen"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crd-gen DIR")
		os.Exit(2)
	}
	files, err := crdgen.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "crd-gen:", err)
		os.Exit(1)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(os.Args[1], name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "crd-gen:", err)
			os.Exit(1)
		}
	}
}
