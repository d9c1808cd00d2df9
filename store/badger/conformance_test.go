package badger_test

import (
	"net/url"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/informerdb/informerdb/store/badger"
	"github.com/informerdb/informerdb/store/storetest"
)

func TestMain(m *testing.M) {
	if badger.RunTestChild() {
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		// badger v4.9.6 does not stop these when Open fails after
		// starting them (a damaged value log found while replaying it,
		// TestCorruptDirectory): a leak in badger, once per failed Open.
		goleak.IgnoreTopFunction("github.com/dgraph-io/badger/v4.(*DB).monitorCache"),
		goleak.IgnoreTopFunction("github.com/dgraph-io/ristretto/v2/z.(*AllocatorPool).freeupAllocators"),
	)
}

func TestConformance(t *testing.T) {
	// The default mode runs with the default durability (fsync per
	// commit). Bounded mode shares the write path (durability is a
	// database setting below both modes), so it runs without fsync to
	// keep the package's test time within budget on shared disks.
	for _, tc := range []struct{ name, query string }{
		{"default", ""},
		{"bounded", "?cache=2&durability=nosync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, storetest.Backend{
				URL: func(t testing.TB) string {
					return "badger://" + (&url.URL{Path: t.TempDir()}).EscapedPath() + tc.query
				},
				Persistent: true,
			})
		})
	}
}
