// Command etcd is etcd v3.6 built from its server module. `go install` refuses
// go.etcd.io/etcd/server/v3 because of its replace directives, so this
// wrapper module carries them and calls the same entry point as etcd's main.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
