// Package crashtest kills processes that write to persistent stores at
// random instants and checks what survives (DESIGN invariants 1, 7 and 9):
// after every kill -9 the store opens without error, its resume point R is
// such that every batch at or before R is fully applied and no later batch
// is even partly applied, and its indexes agree with its objects. Durable
// backends must also keep every batch whose Commit returned before the kill.
//
// The package has only tests. Each backend runs INFORMERDB_CRASH_KILLS kills
// (default 25, so `make test` stays quick; run with INFORMERDB_CRASH_KILLS=200
// for the full run the release checklist asks for), with the kill instants
// drawn from INFORMERDB_CRASH_SEED (default: the time, logged). Run with -v to
// see the summary line of each backend:
//
//	INFORMERDB_CRASH_KILLS=200 go test -race -count=1 -v -run TestCrash ./store/crashtest/
//
// # Concurrency
//
// The test binary re-executes itself as the child that writes; the parent
// only reads the store while no child runs.
package crashtest
