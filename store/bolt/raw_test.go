package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/store/storetest"
)

// deleteHint is the advice every ErrCorrupt of this backend carries.
const deleteHint = "(delete the file to start over; informers relist)"

func mustParse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func readBytes(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantSameBytes fails unless the file at path holds exactly want.
func wantSameBytes(t testing.TB, what, path string, want []byte) {
	t.Helper()
	if got := readBytes(t, path); !bytes.Equal(got, want) {
		t.Errorf("%s changed the file: %d bytes before, %d after", what, len(want), len(got))
	}
}

// editBolt runs fn in a read-write transaction on the bbolt file at path,
// creating it, behind the backend's back.
func editBolt(t testing.TB, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// rawOp is one operation of the bolt driver on a file, as the snapshot
// tool runs them.
type rawOp struct {
	name string
	run  func(ctx context.Context, rawURL string) error
}

func rawReads(t *testing.T) []rawOp {
	return []rawOp{
		{"Stores", func(ctx context.Context, rawURL string) error {
			_, err := bolt.Raw().Stores(ctx, mustParse(t, rawURL))
			return err
		}},
		{"Export", func(ctx context.Context, rawURL string) error {
			_, err := bolt.Raw().Export(ctx, mustParse(t, rawURL), "pods", func(store.Record) error { return nil })
			return err
		}},
		{"IndexEntries", func(ctx context.Context, rawURL string) error {
			return bolt.IndexEntries(ctx, mustParse(t, rawURL), "pods", func(string, string, string) error { return nil })
		}},
	}
}

// rawWrites are the operations that write a file: an Import, a store's
// Open, a Compact, a Drop.
func rawWrites(t *testing.T) []rawOp {
	return []rawOp{
		{"Import", func(ctx context.Context, rawURL string) error {
			info := store.Info{Name: "pods", Codec: "json", Type: "t", KeyFunc: "namespace/name", ResourceVersion: "9"}
			return bolt.Raw().Import(ctx, mustParse(t, rawURL), info, storetest.Records(store.Record{Key: "ns/new", Data: []byte("{}")}))
		}},
		{"Open", func(ctx context.Context, rawURL string) error {
			s, err := store.Open(ctx, rawURL, podOptions("pods"))
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"Open of a new store", func(ctx context.Context, rawURL string) error {
			s, err := store.Open(ctx, rawURL, podOptions("new"))
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"Compact", func(ctx context.Context, rawURL string) error {
			timeout := 5 * time.Second
			if q := mustParse(t, rawURL).Query().Get("lock_timeout"); q != "" {
				var err error
				if timeout, err = time.ParseDuration(q); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err := bolt.Compact(ctx, mustParse(t, rawURL).Path, timeout)
			return err
		}},
		{"Drop", func(ctx context.Context, rawURL string) error {
			return store.Drop(ctx, rawURL, "pods")
		}},
	}
}

// TestLostRootIsCorrupt checks that a file whose stores bucket cannot be
// found, but that holds something else, is ErrCorrupt for every operation,
// naming what it found, and left as it was: read as empty, it made verify
// say OK and compact drop every store.
func TestLostRootIsCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, path string)
		mention string
	}{
		{"flipped byte in the key of the stores bucket", func(t *testing.T, path string) {
			writePods(t, "bolt://"+path, 20)
			data := readBytes(t, path)
			// Every copy: bbolt leaves old copies of the root page in
			// free pages, and only the current one matters.
			n := bytes.Count(data, []byte("stores"))
			if n == 0 {
				t.Fatal(`no "stores" in the file`)
			}
			data = bytes.ReplaceAll(data, []byte("stores"), []byte("storer"))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}, `unknown top-level bucket "storer", no stores bucket`},
		{"another program's bbolt file", func(t *testing.T, path string) {
			editBolt(t, path, func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucket([]byte("widgets"))
				if err != nil {
					return err
				}
				return b.Put([]byte("w1"), []byte("x"))
			})
		}, `unknown top-level bucket "widgets", no stores bucket`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range append(rawReads(t), rawWrites(t)...) {
				t.Run(op.name, func(t *testing.T) {
					rawURL := dbURL(t, "")
					path := pathOf(t, rawURL)
					tc.damage(t, path)
					before := readBytes(t, path)
					err := op.run(t.Context(), rawURL)
					wantErr(t, op.name, err, store.ErrCorrupt, path, tc.mention, deleteHint)
					t.Logf("error: %v", err)
					wantSameBytes(t, op.name, path, before)
				})
			}
		})
	}
}

// TestFreshFileIsEmpty checks that the files informerdb leaves without a
// stores bucket read as empty databases: one bbolt created and nothing
// wrote to, and one whose first Import crashed before moving the store it
// staged.
func TestFreshFileIsEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(tx *bbolt.Tx) error
	}{
		{"no bucket", func(*bbolt.Tx) error { return nil }},
		{"crashed first import", func(tx *bbolt.Tx) error {
			ib, err := tx.CreateBucket([]byte("snapshot-import"))
			if err != nil {
				return err
			}
			_, err = ib.CreateBucket([]byte("pods"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawURL := dbURL(t, "")
			path := pathOf(t, rawURL)
			editBolt(t, path, tc.edit)
			infos, err := bolt.Raw().Stores(t.Context(), mustParse(t, rawURL))
			if err != nil || len(infos) != 0 {
				t.Fatalf("Stores: %v, %v; want no store and no error", infos, err)
			}
			_, err = bolt.Raw().Export(t.Context(), mustParse(t, rawURL), "pods", func(store.Record) error { return nil })
			wantErr(t, "Export", err, store.ErrNotFound, "pods")
			s := mustOpen(t, rawURL, podOptions("pods"))
			if n := len(s.ListKeys()); n != 0 {
				t.Errorf("store has %d keys; want none", n)
			}
			mustClose(t, s)
			writePods(t, rawURL, 3)
			infos, err = bolt.Raw().Stores(t.Context(), mustParse(t, rawURL))
			if err != nil || len(infos) != 1 || infos[0].ResourceVersion != "7" {
				t.Fatalf("Stores after writing: %+v, %v; want store pods at 7", infos, err)
			}
		})
	}
}

// TestRawReadsRefuseNonBoltFiles checks that the read-only operations
// refuse a file that is not a bolt database with ErrCorrupt, and leave it
// as it was: an empty file used to be initialised (bbolt writes its meta
// pages into an empty file), so a status command wrote.
func TestRawReadsRefuseNonBoltFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    []byte
		mention string
	}{
		{"empty", nil, "empty file"},
		{"short text", bytes.Repeat([]byte("not a bolt database\n"), 300), "too small"},
		{"text", bytes.Repeat([]byte("not a bolt database\n"), 2000), "invalid database"},
		{"zeros", make([]byte, 16<<10), ""},
	} {
		for _, op := range rawReads(t) {
			t.Run(tc.name+"/"+op.name, func(t *testing.T) {
				rawURL := dbURL(t, "")
				path := pathOf(t, rawURL)
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tc.data, 0o600); err != nil {
					t.Fatal(err)
				}
				err := op.run(t.Context(), rawURL)
				wantErr(t, op.name, err, store.ErrCorrupt, path, tc.mention, deleteHint)
				t.Logf("error: %v", err)
				wantSameBytes(t, op.name, path, tc.data)
			})
		}
	}
}

// TestRawReadsLeaveFileAlone checks that reading a database through the raw
// driver writes nothing to it.
func TestRawReadsLeaveFileAlone(t *testing.T) {
	rawURL := dbURL(t, "")
	path := pathOf(t, rawURL)
	writePods(t, rawURL, 20)
	before := readBytes(t, path)
	for _, op := range rawReads(t) {
		if err := op.run(t.Context(), rawURL); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		wantSameBytes(t, op.name, path, before)
	}
}

// TestRawLockWaitFollowsContext checks that every operation waiting for a
// file another process holds stops when its context ends, with an error
// wrapping the context's, rather than waiting for the whole lock timeout.
// The test holds the file with a second bbolt open of its own: flock locks
// belong to open file descriptions, so it conflicts with the backend's.
func TestRawLockWaitFollowsContext(t *testing.T) {
	const lockTimeout = 5 * time.Second
	for _, op := range append(rawReads(t), rawWrites(t)...) {
		t.Run(op.name, func(t *testing.T) {
			rawURL := dbURL(t, "")
			path := pathOf(t, rawURL)
			writePods(t, rawURL, 3)
			held, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			before := readBytes(t, path)

			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			// The context's error, not ErrLocked, is what shows the wait
			// ended with the context rather than with the lock timeout.
			err = op.run(ctx, rawURL+"?lock_timeout="+lockTimeout.String())
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrLocked) {
				t.Fatalf("%s of a held file with an expiring context: %v; want the context's error, not ErrLocked", op.name, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			t.Logf("error: %v", err)

			// Without a context that ends, the lock timeout still bounds
			// the wait.
			err = op.run(t.Context(), rawURL+"?lock_timeout=150ms")
			wantErr(t, op.name, err, store.ErrLocked, path, "150ms")
			wantSameBytes(t, op.name, path, before)

			if err := held.Close(); err != nil {
				t.Fatal(err)
			}
			if err := op.run(t.Context(), rawURL); err != nil {
				t.Fatalf("%s once the file is free: %v", op.name, err)
			}
		})
	}
}

// TestCorruptHintOnce checks that errors about a damaged file say once, not
// twice, what to do about it.
func TestCorruptHintOnce(t *testing.T) {
	for _, op := range append(rawReads(t), rawWrites(t)[0]) {
		t.Run(op.name, func(t *testing.T) {
			rawURL := dbURL(t, "")
			path := pathOf(t, rawURL)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, bytes.Repeat([]byte("garbage!"), 4096), 0o600); err != nil {
				t.Fatal(err)
			}
			err := op.run(t.Context(), rawURL)
			wantErr(t, op.name, err, store.ErrCorrupt, path)
			if n := strings.Count(err.Error(), deleteHint); n != 1 {
				t.Errorf("error %q gives the advice %d times; want once", err, n)
			}
		})
	}
}

// TestImportEmptyKey checks that Import refuses a record with an empty key
// (a bbolt key cannot be empty) with ErrInvalid, naming the store and the
// record, and keeps the store it was to replace.
func TestImportEmptyKey(t *testing.T) {
	rawURL := dbURL(t, "")
	u := mustParse(t, rawURL)
	info := store.Info{Name: "pods", Codec: "json", Type: "t", KeyFunc: "namespace/name", ResourceVersion: "5"}
	if err := bolt.Raw().Import(t.Context(), u, info, storetest.Records(store.Record{Key: "ns/old", Data: []byte("{}")})); err != nil {
		t.Fatal(err)
	}
	info.ResourceVersion = "6"
	err := bolt.Raw().Import(t.Context(), u, info, storetest.Records(
		store.Record{Key: "ns/a", Data: []byte("{}")},
		store.Record{Key: "", Data: []byte("{}")},
	))
	wantErr(t, "Import of an empty key", err, store.ErrInvalid, "import pods", "record 2", "empty key")
	t.Logf("error: %v", err)
	var keys []string
	got, err := bolt.Raw().Export(t.Context(), u, "pods", func(r store.Record) error {
		keys = append(keys, r.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != "5" || len(keys) != 1 || keys[0] != "ns/old" {
		t.Errorf("after the failed import: keys %q at %q; want the old store, [ns/old] at 5", keys, got.ResourceVersion)
	}
}

// TestDropFreesPagesForReuse checks what Drop does to the file: it does not
// shrink, later writes reuse the pages the dropped store freed, and Compact
// gives them back.
func TestDropFreesPagesForReuse(t *testing.T) {
	rawURL := dbURL(t, "?durability=nosync")
	path := pathOf(t, rawURL)
	// fill writes 2,000 Pods with large annotations (about 4 MiB) into
	// the store name.
	fill := func(name string) {
		s := mustOpen(t, rawURL, podOptions(name))
		var objs []interface{}
		for i := range 2000 {
			p := newPod("ns", fmt.Sprintf("pod-%04d", i), "1", map[string]string{"app": "a"})
			p.Annotations = map[string]string{"blob": strings.Repeat("x", 2000)}
			objs = append(objs, p)
		}
		if err := s.Replace(objs, "7"); err != nil {
			t.Fatal(err)
		}
		mustClose(t, s)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	writePods(t, rawURL, 3)
	fill("big")
	full := size()
	if err := store.Drop(t.Context(), rawURL, "big"); err != nil {
		t.Fatal(err)
	}
	if got := size(); got != full {
		t.Errorf("the file is %d bytes after the Drop, %d before; bbolt files do not shrink", got, full)
	}
	fill("big again")
	if got := size(); got > full+full/10 {
		t.Errorf("the file grew from %d to %d bytes for as much data as the dropped store freed; want its pages reused", full, got)
	}
	if err := store.Drop(t.Context(), rawURL, "big again"); err != nil {
		t.Fatal(err)
	}
	before, after, err := bolt.Compact(t.Context(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if after > before/4 {
		t.Errorf("Compact after the drops: %d -> %d bytes; want the dropped stores' pages given back", before, after)
	}
	infos, err := store.Stores(t.Context(), rawURL)
	if err != nil || len(infos) != 1 || infos[0].Name != "pods" || infos[0].ResourceVersion != "7" {
		t.Errorf("Stores after the drops and Compact: %+v, %v; want pods at 7 alone", infos, err)
	}
}

// TestDropTakesStagedImport checks that Drop also deletes what an Import of
// the name staged and did not move (a crash), and that a name with nothing
// but such a staged store is not a store: ErrNotFound, the file unchanged.
func TestDropTakesStagedImport(t *testing.T) {
	rawURL := dbURL(t, "")
	path := pathOf(t, rawURL)
	writePods(t, rawURL, 3)
	stage := func(name string) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error {
			ib, err := tx.CreateBucketIfNotExists([]byte("snapshot-import"))
			if err != nil {
				return err
			}
			_, err = ib.CreateBucket([]byte(name))
			return err
		}
	}
	editBolt(t, path, stage("pods"))
	editBolt(t, path, stage("half-imported"))
	before := readBytes(t, path)
	err := store.Drop(t.Context(), rawURL, "half-imported")
	wantErr(t, "Drop of a name only staged", err, store.ErrNotFound, "half-imported", path)
	wantSameBytes(t, "Drop of a name only staged", path, before)
	if err := store.Drop(t.Context(), rawURL, "pods"); err != nil {
		t.Fatal(err)
	}
	editBolt(t, path, func(tx *bbolt.Tx) error {
		ib := tx.Bucket([]byte("snapshot-import"))
		if ib == nil || ib.Bucket([]byte("half-imported")) == nil {
			t.Errorf("Drop of pods took another name's staged import")
		}
		if ib != nil && ib.Bucket([]byte("pods")) != nil {
			t.Errorf("Drop of pods left its staged import")
		}
		if tx.Bucket([]byte("stores")).Bucket([]byte("pods")) != nil {
			t.Errorf("Drop of pods left its bucket")
		}
		return nil
	})
}

// TestDropFromEmptyFile checks that Drop from an empty file (what a crash
// while bbolt created it leaves) finds no store and leaves the file empty
// rather than making a bolt database of it.
func TestDropFromEmptyFile(t *testing.T) {
	rawURL := dbURL(t, "")
	path := pathOf(t, rawURL)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := store.Drop(t.Context(), rawURL, "pods")
	wantErr(t, "Drop from an empty file", err, store.ErrNotFound, "pods", path)
	wantSameBytes(t, "Drop from an empty file", path, nil)
}
