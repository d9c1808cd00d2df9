package snapfile

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
)

// mustURL parses s.
func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// unlockedDriver is a raw driver with no store of its files open in this
// process.
func unlockedDriver() *Backend {
	return &Backend{Scheme: "test", FormatVersion: 1}
}

// TestRawDriverDrop checks that Drop rewrites the file without the store
// and with every other store exactly as it was, header and records (an
// empty key, NUL bytes and 70,000-byte values included), that a store
// without records and the last store of a file drop too, and that a name
// the file lacks, or a file that does not exist, is ErrNotFound and changes
// and creates nothing.
func TestRawDriverDrop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db.snap")
	if err := Write(path, sampleSections()); err != nil {
		t.Fatal(err)
	}
	d := unlockedDriver()
	u := mustURL(t, "test://"+path)
	sorted := func(hs []Header, recs []record) ([]Header, []record) {
		slices.SortFunc(hs, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
		slices.SortFunc(recs, func(a, b record) int {
			return strings.Compare(a.Section+"\x00"+a.Key, b.Section+"\x00"+b.Key)
		})
		return hs, recs
	}
	wantH, wantRecs, err := readAll(t, path)
	if err != nil {
		t.Fatal(err)
	}
	wantH, wantRecs = sorted(wantH, wantRecs)

	for _, name := range []string{"cms", "empty"} {
		if err := d.Drop(context.Background(), u, name); err != nil {
			t.Fatalf("Drop %s: %v", name, err)
		}
		wantH = slices.DeleteFunc(wantH, func(h Header) bool { return h.Name == name })
		wantRecs = slices.DeleteFunc(wantRecs, func(r record) bool { return r.Section == name })
		hs, recs, err := readAll(t, path)
		if err != nil {
			t.Fatalf("Read after Drop %s: %v", name, err)
		}
		hs, recs = sorted(hs, recs)
		if diff := cmp.Diff(wantH, hs); diff != "" {
			t.Errorf("headers after Drop %s (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantRecs, recs); diff != "" {
			t.Errorf("records after Drop %s (-want +got):\n%s", name, diff)
		}
	}

	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cms", "pod", "podsx"} {
		err := d.Drop(context.Background(), u, name)
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), name) {
			t.Errorf("Drop of missing store %q = %v; want ErrNotFound naming it", name, err)
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("Drop of a missing store changed the file (%v)", err)
	}

	if err := d.Drop(context.Background(), u, "pods"); err != nil {
		t.Fatalf("Drop of the last store: %v", err)
	}
	if infos, err := d.Stores(context.Background(), u); err != nil || len(infos) != 0 {
		t.Errorf("Stores after the last store dropped: %+v, %v; want none", infos, err)
	}

	missing := filepath.Join(dir, "sub", "none.snap")
	err = d.Drop(context.Background(), mustURL(t, "test://"+missing), "pods")
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Drop from a file that does not exist = %v; want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Drop from a file that does not exist created its directory (%v)", err)
	}
	err = d.Drop(context.Background(), u, "")
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Drop of the empty name = %v; want ErrInvalid", err)
	}
}
