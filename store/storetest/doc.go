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
// The rules cover client-go's Store and Indexer semantics, unusual keys and
// index values, the empty key (refused by every write, and for persistent
// backends by store.Import), large objects, concurrent use, Commit
// atomicity, resume point semantics, Close, Info and URL parameters, and for
// persistent backends the restart cases (what survives Close and Open, index
// set, codec, type, key function and scope changes, several stores in one
// database, ErrInUse) and store.Drop (one store of several dropped, the
// others untouched record for record; missing names, stores in use,
// concurrent drops).
//
// [CheckIndexes] checks DESIGN invariant 7 on any store; other tests (crash
// tests, backend tests) call it too.
//
// # Concurrency
//
// Run starts goroutines only inside the concurrency rules (Concurrency/...
// and Drop/Concurrent) and waits for them before it returns.
package storetest
