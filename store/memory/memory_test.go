package memory_test

import (
	"testing"

	"go.uber.org/goleak"

	_ "github.com/informerdb/informerdb/store/memory"
	"github.com/informerdb/informerdb/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		URL:        func(testing.TB) string { return "memory://" },
		Persistent: false,
	})
}
