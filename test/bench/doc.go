// Package bench is the logic behind `make demo` (cmd/demo) and `make bench`
// (test/bench/report): a controller's cold start and restart over N
// ConfigMaps on a real kube-apiserver, measured against client-go's
// SharedIndexInformer in the same run; the memory of every backend against
// client-go's indexer, each in a fresh process; and a tiny SVG writer for
// the plots next to BENCHMARKS.md. BenchmarkPipeline (in the tests) measures
// steady-state events per second per backend against client-go.
//
// # Scenario
//
// Run creates N ConfigMaps of about 1 KiB, runs the example controller (an
// informer on a persistent store, a lister, a workqueue-fed handler) from a
// cold start, stops it, changes some of the objects (updates, deletes,
// creates), runs client-go's cold start as the reference, and restarts the
// controller on the same database. Each Phase records the time to synced
// (informer and handler), what the API server sent (its /metrics, or the
// bytes this process read on a cluster whose metrics it cannot read), and the
// handler's notifications at sync. On a kubeconfig cluster (read-only) it
// creates and changes nothing.
//
// # Concurrency
//
// Cluster is safe for concurrent use; Run and the Run* functions may run
// concurrently on one Cluster, but their costs then mix, since the API
// server's metrics are per resource. Results, configs and charts are plain
// values, not safe for concurrent mutation.
//
// # Errors
//
// Errors read "bench: operation subject: cause" and wrap the cause.
package bench
