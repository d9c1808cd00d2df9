package badger

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
)

// fillStore opens the store name in the database dir, writes n Pods at rv
// "7" and closes it.
func fillStore(t *testing.T, dir, name string, n int) {
	t.Helper()
	s, err := store.Open(t.Context(), "badger://"+dir, podOptions(t, name, 0))
	mustOK(t, "open", err)
	var ops []store.Op
	for i := range n {
		ops = append(ops, store.Op{Type: store.OpPut, Object: newPod(i, "7", "web")})
	}
	mustOK(t, "commit", s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: "7"}))
	mustOK(t, "close", s.Close())
}

// truncateManifest cuts the MANIFEST of dir past its magic, inside its
// first change: badger reads that as a torn change and opens a new, empty
// database.
func truncateManifest(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "MANIFEST")
	fi, err := os.Stat(path)
	mustOK(t, "stat MANIFEST", err)
	if fi.Size() <= 12 {
		t.Fatalf("MANIFEST of %d bytes: want a change to cut", fi.Size())
	}
	mustOK(t, "truncate MANIFEST", os.Truncate(path, 12))
}

func storesOf(t *testing.T, dir string) map[string]bool {
	t.Helper()
	names, found, err := readStoresFile(dir)
	mustOK(t, "read the stores file", err)
	if !found {
		t.Fatalf("no %s in %s", storesFile, dir)
	}
	return names
}

// wantCorruptOpen checks that the store name of dir fails to open with
// store.ErrCorrupt saying why.
func wantCorruptOpen(t *testing.T, dir, name, says string) {
	t.Helper()
	s, err := store.Open(t.Context(), "badger://"+dir, podOptions(t, name, 0))
	if err == nil {
		n := len(s.ListKeys())
		_ = s.Close()
		t.Fatalf("open of a database that lost its stores: opened with %d keys; want store.ErrCorrupt", n)
	}
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), says) {
		t.Fatalf("open of a database that lost its stores: %v; want store.ErrCorrupt saying %q", err, says)
	}
}

// A database whose MANIFEST lost its tables never opens as a new, empty
// one: the stores file names the stores it held.
func TestLostStoresAreCorrupt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	fillStore(t, dir, "pods", 20)
	fillStore(t, dir, "other", 3)
	if diff := cmp.Diff(map[string]bool{"pods": true, "other": true}, storesOf(t, dir)); diff != "" {
		t.Fatalf("stores file (-want +got):\n%s", diff)
	}
	truncateManifest(t, dir)
	wantCorruptOpen(t, dir, "pods", `"other", "pods"`)
	// The raw reads of snapshot status and verify refuse it too.
	u := &url.URL{Scheme: Scheme, Path: dir}
	if _, err := Raw().Stores(t.Context(), u); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Stores of a database that lost its stores: %v; want store.ErrCorrupt", err)
	}
}

// A database of an older build has no stores file: the first open writes
// it from the stores badger holds, and from then on a lost store is found.
func TestStoresFileWrittenForOlderDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	fillStore(t, dir, "pods", 20)
	mustOK(t, "remove the stores file", os.Remove(filepath.Join(dir, storesFile)))
	s, err := store.Open(t.Context(), "badger://"+dir, podOptions(t, "pods", 0))
	mustOK(t, "open without a stores file", err)
	if n := len(s.ListKeys()); n != 20 {
		t.Errorf("store opened without a stores file holds %d keys; want 20", n)
	}
	mustOK(t, "close", s.Close())
	if diff := cmp.Diff(map[string]bool{"pods": true}, storesOf(t, dir)); diff != "" {
		t.Fatalf("stores file written on open (-want +got):\n%s", diff)
	}
	truncateManifest(t, dir)
	wantCorruptOpen(t, dir, "pods", `"pods"`)
}

// A new directory gets an empty stores file; a store dropped leaves it,
// and a database whose every store was dropped opens as the empty database
// it is.
func TestStoresFileFollowsCreateAndDrop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	u := &url.URL{Scheme: Scheme, Path: dir}
	fillStore(t, dir, "pods", 5)
	mustOK(t, "drop", Raw().Drop(t.Context(), u, "pods"))
	if got := storesOf(t, dir); len(got) != 0 {
		t.Fatalf("stores file after the drop of the only store: %v; want none", got)
	}
	s, err := store.Open(t.Context(), "badger://"+dir, podOptions(t, "other", 0))
	mustOK(t, "open after every store was dropped", err)
	mustOK(t, "close", s.Close())
	if diff := cmp.Diff(map[string]bool{"other": true}, storesOf(t, dir)); diff != "" {
		t.Fatalf("stores file (-want +got):\n%s", diff)
	}
}

// A store whose creation was durable but whose name never reached the
// stores file (a crash between the two) is named at the next open; so is
// one a Drop took out of the file before it crashed.
func TestStoresFileCatchesUp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	fillStore(t, dir, "pods", 5)
	mustOK(t, "write the stores file", writeStoresFile(dir, map[string]bool{}))
	s, err := store.Open(t.Context(), "badger://"+dir, podOptions(t, "pods", 0))
	mustOK(t, "open", err)
	if n := len(s.ListKeys()); n != 5 {
		t.Errorf("store holds %d keys; want 5", n)
	}
	mustOK(t, "close", s.Close())
	if diff := cmp.Diff(map[string]bool{"pods": true}, storesOf(t, dir)); diff != "" {
		t.Fatalf("stores file (-want +got):\n%s", diff)
	}
}

// A damaged stores file is rewritten from the stores badger holds; with
// none, new and lost cannot be told apart: store.ErrCorrupt.
func TestDamagedStoresFile(t *testing.T) {
	t.Run("with stores", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		fillStore(t, dir, "pods", 5)
		damageStoresFile(t, dir)
		s, err := store.Open(t.Context(), "badger://"+dir, podOptions(t, "pods", 0))
		mustOK(t, "open with a damaged stores file", err)
		if n := len(s.ListKeys()); n != 5 {
			t.Errorf("store holds %d keys; want 5", n)
		}
		mustOK(t, "close", s.Close())
		if diff := cmp.Diff(map[string]bool{"pods": true}, storesOf(t, dir)); diff != "" {
			t.Fatalf("stores file rewritten (-want +got):\n%s", diff)
		}
	})
	t.Run("without stores", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		s, err := store.Open(t.Context(), "badger://"+dir, podOptions(t, "pods", 0))
		mustOK(t, "open", err)
		mustOK(t, "close", s.Close())
		mustOK(t, "drop", Raw().Drop(context.Background(), &url.URL{Scheme: Scheme, Path: dir}, "pods"))
		damageStoresFile(t, dir)
		wantCorruptOpen(t, dir, "pods", "checksum mismatch")
	})
}

func damageStoresFile(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, storesFile)
	data, err := os.ReadFile(path)
	mustOK(t, "read the stores file", err)
	data[len(data)/2] ^= 0x20
	mustOK(t, "damage the stores file", os.WriteFile(path, data, 0o600))
}

func TestStoresFileFormat(t *testing.T) {
	for _, names := range []map[string]bool{{}, {"a": true}, {"a": true, "ab": true, "\x00\xff": true, strings.Repeat("x", 5000): true}} {
		got, err := decodeStores(encodeStores(names))
		mustOK(t, "decode", err)
		if diff := cmp.Diff(names, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	data := encodeStores(map[string]bool{"a": true, "b": true})
	for n := range len(data) {
		if _, err := decodeStores(data[:n]); err == nil {
			t.Errorf("decode of the first %d of %d bytes: no error", n, len(data))
		}
	}
}

// FrozenView reads a closed database from a private copy, which reads
// leave the directory as it is and release deletes; a database open in
// this process is read through its open database.
func TestFrozenView(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	fillStore(t, dir, "pods", 20)
	before := dirSums(t, dir)
	u := &url.URL{Scheme: Scheme, Path: dir}
	v, release, err := Raw().(store.RawFrozenViewer).FrozenView(t.Context(), u)
	mustOK(t, "FrozenView", err)
	if v.Path == dir || !strings.HasPrefix(v.Path, os.TempDir()) {
		t.Errorf("view of a closed database at %s; want a copy in %s", v.Path, os.TempDir())
	}
	n := 0
	_, err = Raw().Export(t.Context(), v, "pods", func(store.Record) error { n++; return nil })
	mustOK(t, "export from the view", err)
	if n != 20 {
		t.Errorf("view holds %d records; want 20", n)
	}
	mustOK(t, "release", release())
	if _, err := os.Stat(v.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("view after its release: %v; want it deleted", err)
	}
	if diff := cmp.Diff(before, dirSums(t, dir)); diff != "" {
		t.Errorf("the view changed the database's files (-before +after):\n%s", diff)
	}

	s, err := store.Open(t.Context(), "badger://"+dir, podOptions(t, "pods", 0))
	mustOK(t, "open", err)
	defer s.Close()
	v, release, err = Raw().(store.RawFrozenViewer).FrozenView(t.Context(), u)
	mustOK(t, "FrozenView of an open database", err)
	if v.Path != dir {
		t.Errorf("view of a database open in this process at %s; want %s", v.Path, dir)
	}
	mustOK(t, "release", release())
}

// dirSums returns the content of every file of dir but LOCK, by name.
func dirSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	mustOK(t, "ReadDir", err)
	out := map[string]string{}
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		mustOK(t, "ReadFile", err)
		out[e.Name()] = fmt.Sprintf("%x", sha256.Sum256(data))
	}
	return out
}

// A store an Import creates (snapshot restore) is named in the stores file
// like one an Open creates.
func TestStoresFileNamesImportedStore(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	fillStore(t, src, "pods", 5)
	var recs []store.Record
	info, err := Raw().Export(t.Context(), &url.URL{Scheme: Scheme, Path: src}, "pods", func(r store.Record) error {
		r.Data = append([]byte(nil), r.Data...)
		recs = append(recs, r)
		return nil
	})
	mustOK(t, "export", err)
	dst := filepath.Join(t.TempDir(), "dst")
	info.Name = "restored"
	mustOK(t, "import", Raw().Import(t.Context(), &url.URL{Scheme: Scheme, Path: dst}, info, func() (store.Record, error) {
		if len(recs) == 0 {
			return store.Record{}, io.EOF
		}
		r := recs[0]
		recs = recs[1:]
		return r, nil
	}))
	if diff := cmp.Diff(map[string]bool{"restored": true}, storesOf(t, dst)); diff != "" {
		t.Fatalf("stores file after the import (-want +got):\n%s", diff)
	}
	truncateManifest(t, dst)
	wantCorruptOpen(t, dst, "restored", `"restored"`)
}
