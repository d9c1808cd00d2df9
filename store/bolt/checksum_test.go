package bolt

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/store"
)

// setFormat3 turns the store "pods" of the file at path into what format
// version 3 wrote: version 3 in the metadata and no record frames.
func setFormat3(t *testing.T, path string) {
	t.Helper()
	editFile(t, path, func(tx *bbolt.Tx) error {
		b, err := storeBuckets(tx, "pods")
		if err != nil {
			return err
		}
		return writeOldFormat(b, formatUnsealed)
	})
}

// TestFormatVersion3Upgraded opens a store of format version 3 (records
// without frames), in each mode: it reads back what was written, and its
// records are framed and its format version 4 afterwards.
func TestFormatVersion3Upgraded(t *testing.T) {
	for _, cacheSize := range []int{0, 3} {
		t.Run(fmt.Sprintf("cache=%d", cacheSize), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pods.db")
			s := openFivePods(t, path)
			if err := s.Commit(t.Context(), store.Batch{ResourceVersion: "42"}); err != nil {
				t.Fatal(err)
			}
			wantIndexes := indexView(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			setFormat3(t, path)
			infos, err := Raw().Stores(t.Context(), &url.URL{Scheme: Scheme, Path: path})
			if err != nil || len(infos) != 1 || infos[0].FormatVersion != formatUnsealed || infos[0].ResourceVersion != "42" {
				t.Fatalf("raw Stores of a version 3 file: %+v, %v; want one store of version 3 at 42", infos, err)
			}

			s, err = open(t.Context(), path, entriesOptions(t, cacheSize))
			if err != nil {
				t.Fatalf("open a version 3 store: %v", err)
			}
			defer s.Close()
			if rv := s.ResourceVersion(); rv != "42" {
				t.Errorf("resume point %q after the upgrade, want 42", rv)
			}
			if diff := cmp.Diff(wantIndexes, indexView(t, s)); diff != "" {
				t.Errorf("indexes after the upgrade (-want +got):\n%s", diff)
			}
			if n := len(s.List()); n != 5 {
				t.Errorf("List: %d objects after the upgrade, want 5", n)
			}
			err = fileOf(s).db.View(func(tx *bbolt.Tx) error {
				b, err := storeBuckets(tx, "pods")
				if err != nil {
					return err
				}
				if !b.sealed {
					return errors.New("records not framed after the upgrade")
				}
				m, err := getMeta(b)
				if err != nil {
					return err
				}
				if m.FormatVersion != FormatVersion {
					return fmt.Errorf("format version %d after the upgrade, want %d", m.FormatVersion, FormatVersion)
				}
				return eachKeyRecord(b, 2, func(key string, seq uint64, _ [][]string) error {
					_, err := objectOf(b, key, seq)
					return err
				})
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDamagedRecordIsCorrupt flips one byte of a record of each kind
// inside its frame, as damage to the file would, and checks that the store
// reports store.ErrCorrupt naming the store and the record instead of
// returning what the record now says.
func TestDamagedRecordIsCorrupt(t *testing.T) {
	for _, rec := range []struct {
		name string
		// damage flips a byte of the record in b and returns what the
		// error must name.
		damage func(b *buckets) (string, error)
	}{
		{"object", func(b *buckets) (string, error) {
			k, v := b.objects.Cursor().First()
			return "object", flip(b.objects, k, v, len(v)/2)
		}},
		{"key record", func(b *buckets) (string, error) {
			k, v := b.keys.Cursor().First()
			return string(k), flip(b.keys, k, v, 0)
		}},
		{"resume point", func(b *buckets) (string, error) {
			return "resume point", flip(b.meta, keyRV, b.meta.Get(keyRV), 0)
		}},
		{"metadata", func(b *buckets) (string, error) {
			return "metadata record", flip(b.meta, keyMeta, b.meta.Get(keyMeta), 2)
		}},
		{"emptied object", func(b *buckets) (string, error) {
			k, _ := b.objects.Cursor().First()
			return "empty record", b.objects.Put(k, seal(k, nil))
		}},
	} {
		for _, cacheSize := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s/cache=%d", rec.name, cacheSize), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "pods.db")
				s := openFivePods(t, path)
				if err := s.Commit(t.Context(), store.Batch{ResourceVersion: "42"}); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				var names string
				editFile(t, path, func(tx *bbolt.Tx) error {
					b, err := storeBuckets(tx, "pods")
					if err != nil {
						return err
					}
					names, err = rec.damage(b)
					return err
				})
				s, err := open(t.Context(), path, entriesOptions(t, cacheSize))
				if err == nil {
					// The bounded mode reads objects when asked.
					defer s.Close()
					for _, k := range s.ListKeys() {
						if _, _, err = s.GetByKey(k); err != nil {
							break
						}
					}
					if err == nil && cacheSize > 0 {
						// ListKeys cannot return its error.
						err = s.(store.ReadFailer).ReadErr()
					}
				}
				if !errors.Is(err, store.ErrCorrupt) {
					t.Fatalf("error %v; want ErrCorrupt", err)
				}
				for _, want := range []string{`"pods"`, names} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
			})
		}
	}
}

// flip rewrites the record k of bk with byte i of its value v flipped.
func flip(bk *bbolt.Bucket, k, v []byte, i int) error {
	if v == nil {
		return fmt.Errorf("no record %q", k)
	}
	bad := append([]byte(nil), v...)
	bad[i] ^= 0x20
	return bk.Put(append([]byte(nil), k...), bad)
}
