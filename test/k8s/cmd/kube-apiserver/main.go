// Command kube-apiserver is the upstream Kubernetes API server, built from the
// k8s.io/kubernetes Go module so the test harness in test/apiserver can run a
// real API server without downloading release binaries.
package main

import (
	"os"

	_ "time/tzdata" // as upstream: time zone support for CronJob

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // as upstream: JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // as upstream: client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // as upstream: version metric
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	// Same as upstream cmd/kube-apiserver/apiserver.go.
	command := app.NewAPIServerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
