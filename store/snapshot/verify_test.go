package snapshot_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/recsum"
	"github.com/informerdb/informerdb/store/snapshot"
)

// editBolt runs fn on the index bucket of podsName in the bolt file at
// rawURL, behind the backend's back, to damage it.
func editBolt(t *testing.T, rawURL string, fn func(index *bbolt.Bucket) error) {
	t.Helper()
	db, err := bbolt.Open(strings.TrimPrefix(rawURL, "bolt://"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		return fn(tx.Bucket([]byte("stores")).Bucket([]byte(podsName)).Bucket([]byte("index")))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// entryOf returns the key of the entry of key under prefix in an index
// bucket of a bolt store. Entries are framed by recsum (bolt format
// version 4).
func entryOf(ib *bbolt.Bucket, prefix, key string) ([]byte, error) {
	c := ib.Cursor()
	for k, v := c.Seek([]byte(prefix)); k != nil && strings.HasPrefix(string(k), prefix); k, v = c.Next() {
		if v, ok := recsum.Open(k, v); ok && string(v) == key {
			return bytes.Clone(k), nil
		}
	}
	return nil, fmt.Errorf("no entry of %q under %q", key, prefix)
}

func TestVerifyFindsIndexDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(index *bbolt.Bucket) error
		want   string
	}{
		{"missing entry", func(index *bbolt.Bucket) error {
			// Entry keys are uvarint(len(value)) value seq (8 bytes),
			// their values the object key, framed by recsum (bolt
			// format version 4).
			k, err := entryOf(index.Bucket([]byte("namespace")), "\x04ns-3", "ns-3/pod-00003")
			if err != nil {
				return err
			}
			return index.Bucket([]byte("namespace")).Delete(k)
		}, `index "namespace" value "ns-3" lacks "ns-3/pod-00003"`},
		{"extra entry", func(index *bbolt.Bucket) error {
			k, err := entryOf(index.Bucket([]byte("namespace")), "\x04ns-3", "ns-3/pod-00003")
			if err != nil {
				return err
			}
			// A well-framed entry: verify must find it by the index,
			// not by its checksum.
			ek := append([]byte("\x06node-9"), k[len(k)-8:]...)
			return index.Bucket([]byte("node")).Put(ek, recsum.Seal(ek, []byte("ns-3/pod-00003")))
		}, `index "node" value "node-9" lists "ns-3/pod-00003"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bounded mode keeps index entries on disk (the
			// default mode keeps them in memory only).
			u := boltURL(t)
			fill(t, u+"?cache=10", 20, 0, "5")
			if _, err := snapshot.Verify(t.Context(), u, &snapshot.VerifyOptions{Entries: entries}); err != nil {
				t.Fatalf("verify before the damage: %v", err)
			}
			editBolt(t, u, tc.damage)
			_, err := snapshot.Verify(t.Context(), u, &snapshot.VerifyOptions{Entries: entries})
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("verify after the damage: %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("verify error %q does not say %q", err, tc.want)
			}
		})
	}
}

// A process saves its own open stores while writing to them: each store's
// records and resume point come from one view.
func TestSaveOnline(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(testing.TB) string
	}{
		{"bolt default mode through its URL", boltURL},
		{"bolt bounded mode", func(t testing.TB) string { return boltURL(t) + "?cache=10" }},
		{"badger", badgerURL},
		{"memdb", func(testing.TB) string { return "memdb://" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			u := tc.url(t)
			s, err := store.Open(ctx, u, podOptions(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Batches of 10 Pods, each with the resume point of its
			// last Pod: the snapshot must hold exactly the Pods up to its
			// resume point.
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := 0; b < 40; b++ {
					var ops []store.Op
					for i := b * 10; i < b*10+10; i++ {
						ops = append(ops, store.Op{Type: store.OpPut, Object: pod(i, 0)})
					}
					if err := s.Commit(ctx, store.Batch{ResourceVersion: fmt.Sprint(b*10 + 9), Ops: ops}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			file := filepath.Join(t.TempDir(), "online.idb")
			var m *snapshot.Manifest
			if _, isExporter := s.(store.Exporter); isExporter {
				m, err = snapshot.SaveStores(ctx, file, []store.Store{s}, nil)
			} else {
				m, err = snapshot.SaveURL(ctx, file, strings.Split(u, "?")[0], nil)
			}
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			sh := m.Store(podsName)
			if sh == nil {
				t.Fatalf("no store in %+v", m.Stores)
			}
			var want int64
			if sh.Info.ResourceVersion != "" {
				var last int64
				if _, err := fmt.Sscan(sh.Info.ResourceVersion, &last); err != nil {
					t.Fatalf("resume point %q: %v", sh.Info.ResourceVersion, err)
				}
				want = last + 1
			}
			if sh.Objects != want {
				t.Errorf("snapshot at resume point %q holds %d objects, want %d", sh.Info.ResourceVersion, sh.Objects, want)
			}
			if _, err := snapshot.Read(ctx, file, nil); err != nil {
				t.Errorf("the online snapshot does not verify: %v", err)
			}
		})
	}
}

// What a bolt import that crashed before its switch leaves (a half-built
// store in the staging bucket) is dropped by the next import and never seen
// by readers.
func TestBoltImportAfterCrashedImport(t *testing.T) {
	ctx := t.Context()
	src, dst := boltURL(t), boltURL(t)
	fill(t, src, 30, 0, "9")
	fill(t, dst, 3, 0, "1")
	db, err := bbolt.Open(strings.TrimPrefix(dst, "bolt://"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		ib, err := tx.CreateBucketIfNotExists([]byte("snapshot-import"))
		if err != nil {
			return err
		}
		sb, err := ib.CreateBucket([]byte(podsName))
		if err != nil {
			return err
		}
		return sb.Put([]byte("junk"), []byte("left by a crash"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	before, err := snapshot.Status(ctx, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := before.Store(podsName); st == nil || st.Objects != 3 || st.Info.ResourceVersion != "1" {
		t.Fatalf("the staged garbage is visible: %+v", before.Stores)
	}
	file := snapPath(t)
	saved, err := snapshot.SaveURL(ctx, file, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Restore(ctx, file, dst, &snapshot.RestoreOptions{Force: true, Stores: []string{podsName}}); err != nil {
		t.Fatal(err)
	}
	after, err := snapshot.Verify(ctx, dst, &snapshot.VerifyOptions{Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := after.Store(podsName), saved.Store(podsName); g.ContentHash != w.ContentHash || g.Info.ResourceVersion != "9" {
		t.Errorf("after the import: %+v, want hash %s and resume point 9", g, w.ContentHash)
	}
}

// An object whose record is whole (its checksum matches) but whose bytes
// are not an object: Verify finds it by decoding every object with the
// Decoder it is given.
func TestVerifyDecodesObjects(t *testing.T) {
	u := boltURL(t)
	fill(t, u, 20, 0, "5")
	db, err := bbolt.Open(strings.TrimPrefix(u, "bolt://"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		objects := tx.Bucket([]byte("stores")).Bucket([]byte(podsName)).Bucket([]byte("objects"))
		k, _ := objects.Cursor().First()
		k = bytes.Clone(k)
		return objects.Put(k, recsum.Seal(k, []byte{0x0a, 0xff, 0xff, 0xff}))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Verify(t.Context(), u, nil); err != nil {
		t.Fatalf("verify without a decoder: %v; want the records' checksums to pass", err)
	}
	c := podOptions(t).Codec
	decoded := 0
	_, err = snapshot.Verify(t.Context(), u, &snapshot.VerifyOptions{Decoder: func(info store.Info) (func([]byte) error, error) {
		if info.Name != podsName {
			return nil, fmt.Errorf("decoder asked for store %q", info.Name)
		}
		return func(data []byte) error {
			decoded++
			_, err := c.Decode(data)
			return err
		}, nil
	}})
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "does not decode") {
		t.Fatalf("verify with a decoder: %v; want store.ErrCorrupt naming an object that does not decode", err)
	}
	if decoded != 20 {
		t.Errorf("verify decoded %d objects; want all 20", decoded)
	}
}
