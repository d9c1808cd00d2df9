package store

import (
	"errors"
	"strings"
	"testing"
)

// TestOpenWithoutScheme checks that a URL no registered backend serves (a
// plain path, an empty URL, file://, another scheme) is refused before any
// backend sees it, with one answer: what a database URL is and which
// schemes are registered. Open said `scheme "" (forgotten import of
// .../store/?)` for a path, and suggested a store/file package for file://.
// A scheme of this module's backends that is not registered is a missing
// blank import, and says so. CheckURL answers as Open does.
func TestOpenWithoutScheme(t *testing.T) {
	for _, tc := range []struct {
		url      string
		says     []string
		mustNots []string
	}{
		{"", []string{`open ""`, "not a database URL (no scheme)", "<scheme>://<path>", schemeList()}, []string{"forgotten import"}},
		{"/var/lib/app/cache.db", []string{`"/var/lib/app/cache.db"`, "not a database URL (no scheme)", schemeList()}, []string{"forgotten import"}},
		{"cache.db", []string{"not a database URL (no scheme)", schemeList()}, []string{"forgotten import"}},
		{"file:///var/lib/app/cache.db", []string{`unknown scheme "file"`, "<scheme>://<path>", schemeList()}, []string{"forgotten import", "store/file"}},
		{"nosuch:///x", []string{`unknown scheme "nosuch"`, schemeList()}, []string{"forgotten import"}},
	} {
		t.Run(tc.url, func(t *testing.T) {
			s, err := Open(t.Context(), tc.url, &Options{Name: "pods"})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open(%q) = %v, %v; want ErrInvalid", tc.url, s, err)
			}
			for _, want := range tc.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open(%q): %q does not say %q", tc.url, err, want)
				}
			}
			for _, not := range tc.mustNots {
				if strings.Contains(err.Error(), not) {
					t.Errorf("Open(%q): %q says %q", tc.url, err, not)
				}
			}
			if cerr := CheckURL(tc.url); cerr == nil || cerr.Error() != err.Error() || !errors.Is(cerr, ErrInvalid) {
				t.Errorf("CheckURL(%q) = %v; want Open's error %q", tc.url, cerr, err)
			}
		})
	}
	if err := CheckURL(schemeDropper + ":///db"); err != nil {
		t.Errorf("CheckURL of a registered scheme: %v", err)
	}
}

// TestOpenUnregisteredModuleBackend checks that a scheme of this module's
// backends whose package is not imported names the missing blank import.
// The test binary imports every backend (the external tests do), so the
// test takes one out of the registry for its duration.
func TestOpenUnregisteredModuleBackend(t *testing.T) {
	const scheme = "memdb"
	driversMu.Lock()
	d, ok := drivers[scheme]
	delete(drivers, scheme)
	driversMu.Unlock()
	if ok {
		t.Cleanup(func() {
			driversMu.Lock()
			drivers[scheme] = d
			driversMu.Unlock()
		})
	}
	err := CheckURL(scheme + ":///x.snap")
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("CheckURL of an unregistered module backend = %v; want ErrInvalid", err)
	}
	for _, want := range []string{"the memdb backend is not registered", "forgotten import of github.com/informerdb/informerdb/store/memdb?", "registered: " + schemeList()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
