// Package crash is the crash-restart resume suite (DESIGN invariants 1, 4, 7
// and 9 against a real API server): a child process runs a persistent
// informer against a real kube-apiserver, the parent kills it with SIGKILL at
// random instants, changes ConfigMaps while it is down (creates, updates,
// deletes, deletes with a re-create under the same name), sometimes restarts
// the API server so that the watch history is lost, restarts the child and
// checks, cycle after cycle:
//
//   - after each kill, the persisted store equals the API server's state at
//     the persisted resume point R, per the parent's own watch of every
//     change with its resourceVersion (the resume point never ran ahead of
//     the objects, and nothing after R is applied);
//   - the reopened store's indexes agree with its objects
//     (storetest.CheckIndexes);
//   - once the restarted child has synced, its store and what its handler
//     saw (replay of the persisted objects, then every notification,
//     journalled by the handler) equal the API server's state, so every
//     delete made while the child was down reached the handler as OnDelete,
//     and no notification contradicts the one before it;
//   - the restart made no full LIST when its resume point was inside the
//     watch window (API server metrics: the limit=1 probe only), and did
//     relist when the API server had been restarted since R.
//
// The backends: bolt, badger, and memory and memdb with a snapshot file
// written every 100ms (whose kill loses what came after the last snapshot,
// so the restart resumes from an older point and receives it again).
//
// It also checks that a second child started on a database held by a
// running one fails with store.ErrLocked instead of hanging, and that a
// database damaged while the child was down makes the child fail with
// store.ErrCorrupt, after which deleting it and restarting relists and
// converges.
//
// Related suites: store/crashtest kills a writer of each persistent store
// at random instants (hundreds of kills per backend, INFORMERDB_CRASH_KILLS)
// and fills the disk under a commit (TestDiskFull: a file size limit makes
// writes fail); test/e2e covers history lost, scope changes, a deleted CRD
// and restored snapshots against the real API server.
//
// The package has only tests. INFORMERDB_CRASH_CYCLES sets the kill cycles
// per backend (default 4, which keeps `make test` quick);
// INFORMERDB_CRASH_SEED fixes the random choices (default: the time; it is
// logged). `make crash CYCLES=1000` runs the soak:
//
//	INFORMERDB_CRASH_CYCLES=1000 go test -count=1 -v -timeout 0 -run '^TestCrash$' ./test/crash
//
// Each backend prints one summary line: cycles, kills, events checked,
// relists, resumes, violations.
package crash
