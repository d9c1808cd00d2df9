package driver

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/informerdb/informerdb/store"
)

// commonParams reads the shared parameters of rawURL over the default
// store.Options, and returns them with Params.Err.
func commonParams(t *testing.T, rawURL string) (store.Options, error) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	o, err := (&store.Options{}).WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	p := NewParams(u)
	p.Common(&o)
	return o, p.Err()
}

// TestParamsMalformedQuery checks that a query string that does not parse
// is an error naming the cause, not a silently dropped parameter (url.Query
// drops pairs it cannot parse, a "nosync;cache=10" typo among them, and the
// store would open with settings the user did not ask for).
func TestParamsMalformedQuery(t *testing.T) {
	for _, raw := range []string{
		"bolt:///tmp/x.db?durability=nosync;cache=10",
		"bolt:///tmp/x.db?lock_timeout=5%s",
		"bolt:///tmp/x.db?%zz",
		"bolt:///tmp/x.db?durability=nosync&cache=1%",
	} {
		t.Run(raw, func(t *testing.T) {
			_, err := commonParams(t, raw)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Err() = %v, want an error wrapping store.ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), "store: open") || !strings.Contains(err.Error(), "query") {
				t.Errorf("error %q does not name the operation and the query", err)
			}
		})
	}
}

// TestParamsLockTimeoutZero checks that lock_timeout=0 is refused: the
// default applies only to store.Options, so a 0 from the URL reached the backend,
// where bolt (bbolt's Timeout 0) waits for another process's lock forever.
func TestParamsLockTimeoutZero(t *testing.T) {
	o, err := commonParams(t, "bolt:///tmp/x.db?lock_timeout=0s")
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "lock_timeout") {
		t.Fatalf("Err() = %v (LockTimeout %v), want an error naming lock_timeout wrapping store.ErrInvalid", err, o.LockTimeout)
	}

	// A positive value is still taken.
	o, err = commonParams(t, "bolt:///tmp/x.db?lock_timeout=250ms&durability=nosync&cache=3")
	if err != nil {
		t.Fatal(err)
	}
	if o.LockTimeout != 250*time.Millisecond || o.Durability != store.DurabilityNoSync || o.CacheSize != 3 {
		t.Errorf("options %+v, want lock_timeout 250ms, nosync, cache 3", o)
	}
}

// TestParamsBytes checks the quantities Bytes takes and the ones it refuses.
func TestParamsBytes(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  int64
		bad   bool
	}{
		{"", 7, false},
		{"min_free=0", 0, false},
		{"min_free=128Mi", 128 << 20, false},
		{"min_free=1G", 1e9, false},
		{"min_free=4096", 4096, false},
		{"min_free=-1Mi", 7, true},
		{"min_free=1.5", 7, true},
		{"min_free=lots", 7, true},
		{"min_free=10Ei", 7, true},
	} {
		t.Run(tc.query, func(t *testing.T) {
			u, err := url.Parse("badger:///tmp/db?" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			p := NewParams(u)
			got := p.Bytes("min_free", 7)
			err = p.Err()
			if tc.bad {
				if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "min_free") {
					t.Errorf("Err() = %v; want store.ErrInvalid naming min_free", err)
				}
			} else if err != nil {
				t.Errorf("Err() = %v", err)
			}
			if got != tc.want {
				t.Errorf("Bytes = %d; want %d", got, tc.want)
			}
		})
	}
}
