package storetest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Backends opened by the benchmarks start goroutines (badger's compactors,
// snapshot timers); every one must be gone once its store is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
