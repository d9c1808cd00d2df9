package store

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// dropRecorder is a RawDriver whose only method is Drop (Drop must not call
// another), which records its calls.
type dropRecorder struct {
	RawDriver // nil: its other methods are not called
	calls     []string
}

func (d *dropRecorder) Drop(_ context.Context, u *url.URL, name string) error {
	d.calls = append(d.calls, u.Path+" "+name)
	return nil
}

// Schemes the tests of this file register; registration is for the life of
// the test binary, so each test uses its own.
const (
	schemeDropper   = "droptest-dropper"
	schemeNoDropper = "droptest-nodropper"
)

var testDropper = &dropRecorder{}

func init() {
	Register(schemeDropper, testDropper)
	Register(schemeNoDropper, DriverFunc(func(context.Context, *url.URL, Options) (Store, error) {
		return nil, errors.New("not used")
	}))
}

// TestDropDispatch checks that Drop hands a valid request to the scheme's
// RawDriver, and refuses bad input with ErrInvalid naming the cause, never
// calling a driver: an empty name, a malformed URL, an unknown scheme, and
// a backend without RawDriver.
func TestDropDispatch(t *testing.T) {
	testDropper.calls = nil
	if err := Drop(t.Context(), schemeDropper+":///db", "core/v1/ConfigMap@ns=old"); err != nil {
		t.Fatalf("Drop through a RawDriver: %v", err)
	}
	if want := []string{"/db core/v1/ConfigMap@ns=old"}; len(testDropper.calls) != 1 || testDropper.calls[0] != want[0] {
		t.Fatalf("driver calls %q; want %q", testDropper.calls, want)
	}
	for _, tc := range []struct {
		name, url, store string
		says             []string
	}{
		{"empty name", schemeDropper + ":///db", "", []string{"drop", "empty store name"}},
		{"malformed URL", "bolt://%zz/db", "pods", []string{"drop pods", "%zz"}},
		{"unknown scheme", "nosuchscheme:///db", "pods", []string{"drop pods", `unknown scheme "nosuchscheme"`, schemeDropper}},
		{"no scheme", "/db", "pods", []string{"drop pods", "not a database URL (no scheme)", schemeDropper}},
		{"backend without Drop", schemeNoDropper + ":///db", "pods", []string{"drop pods", "cannot drop a store"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testDropper.calls = nil
			err := Drop(t.Context(), tc.url, tc.store)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Drop(%q, %q) = %v; want ErrInvalid", tc.url, tc.store, err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if len(testDropper.calls) != 0 {
				t.Errorf("a refused Drop reached the driver: %q", testDropper.calls)
			}
		})
	}
}
