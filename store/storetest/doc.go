// Package storetest is the conformance suite every informerdb backend runs.
// A backend's test file calls [Run] with a [Backend] describing how to get a
// fresh database URL; each rule of the store contract is a named subtest, and
// every rule goes through store.Open like users do:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Backend{
//			URL:        func(t testing.TB) string { return "bolt://" + filepath.Join(t.TempDir(), "db") },
//			Persistent: true,
//		})
//	}
//
// Each rule logs the contract it checks; the rules of restarts and Drop
// run for persistent backends. [CheckIndexes] checks DESIGN invariant 7 on
// any store; crash and backend tests call it too.
//
// # Concurrency
//
// Run starts goroutines only inside the concurrency rules (Concurrency/...
// and Drop/Concurrent) and waits for them before it returns.
package storetest
