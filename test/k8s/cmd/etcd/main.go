// Command etcd is the upstream etcd server, built from go.etcd.io/etcd/server/v3
// so the test harness in test/apiserver can run it as the API server's storage.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
