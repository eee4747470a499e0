// Command nodewright is the operator's CLI: `nodewright plan` shows what
// Nodewright would launch for a cluster snapshot, without touching AWS;
// `nodewright webhook apply` registers the pending-pod webhook in the
// cluster with the token read from Secrets Manager.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
