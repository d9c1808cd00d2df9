// Package damagetest damages the files of every backend and checks that
// damage never becomes data (DESIGN invariant 8): a store opened on a
// damaged file fails with an error, or starts empty saying why, or reads
// back exactly what was written; it never returns another object, never
// opens silently empty, never panics and never hangs. `snapshot verify`
// (snapshot.Verify) must fail whenever a read does, and must not change
// the files it verifies.
//
// The package has only tests. TestDamage writes a database per file kind
// (bolt in the default and the bounded mode, with and without encryption;
// badger's MANIFEST, tables and value logs in both modes; memory and memdb
// snapshot files; portable snapshots), then runs trials: each copies the
// pristine files, damages one file of the kind (flips 1 to 16 random bytes,
// or truncates it at a random length) and, in a child process bounded by a
// deadline, verifies the copy, opens it, reads every key, lists, queries an
// index and compares with what was written. Each trial is classified:
//
//	error       Open, a read or Verify failed (with the store's error)
//	no effect   every object, index entry and the resume point read back intact
//	reset       the store opened empty and said why (Info().Reset)
//	panic       the child panicked
//	hang        the child did not finish before the deadline
//	wrong data  a read returned another object, missed one, or the store
//	            opened empty without saying why (silent empty)
//
// besides, per trial, whether Verify passed a file whose reads fail and
// whether it changed a file. The default profile (a few trials per kind, a
// fixed seed) runs in `make test`; `make damage` runs the long one:
//
//	INFORMERDB_DAMAGE_TRIALS=200 INFORMERDB_DAMAGE_OBJECTS=2000 go test -count=1 -v -timeout 0 -run TestDamage ./store/damagetest/
//
// INFORMERDB_DAMAGE_SEED changes the seed and INFORMERDB_DAMAGE_KINDS (a
// regular expression) selects file kinds. Run with -v for the table.
//
// # Concurrency
//
// The test binary re-executes itself as the child that reads one damaged
// copy; the parent only copies and damages files while no child runs.
package damagetest
