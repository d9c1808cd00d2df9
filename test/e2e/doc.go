// Package e2e holds end-to-end tests of informerdb informers against a real
// kube-apiserver and etcd (package test/apiserver): what a restart costs the
// API server, what handlers see when the informer resumes or relists, and
// how a restarted controller built on a generated lister and a workqueue
// picks up where it stopped, a controller-runtime manager whose
// multi-namespace cache restarts on one database, and a factory's dynamic
// (custom resource), metadata-only and typed informers.
//
// The tests start one API server per test function, shared by its subtests,
// and skip under -short (the harness does). INFORMERDB_E2E_N sets how many
// ConfigMaps the cold-start test creates (default 2,000; reporting runs use
// 20,000):
//
//	INFORMERDB_E2E_N=20000 go test -race -count=1 -run TestResume -v ./test/e2e
//
// The package has no non-test API.
package e2e
