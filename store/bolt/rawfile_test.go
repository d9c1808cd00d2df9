package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/recsum"
	"github.com/informerdb/informerdb/store/storetest"
)

// TestWriteWaitsForReadOnlyOpen checks that a write (an Import, a store's
// Open) never uses the read-only open of a file that reads of the raw
// driver share: it waits for them to close it, until its context ends or
// its lock timeout passes, and then writes through a read-write open.
func TestWriteWaitsForReadOnlyOpen(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	writes := []struct {
		name string
		run  func(ctx context.Context, rawURL string) error
	}{
		{"Import", func(ctx context.Context, rawURL string) error {
			u, err := url.Parse(rawURL)
			if err != nil {
				return err
			}
			return Raw().Import(ctx, u, store.Info{Name: "other", Codec: codec.Name(), Type: codec.Type()}, oneRecord("ns/b"))
		}},
		{"Open", func(ctx context.Context, rawURL string) error {
			s, err := store.Open(ctx, rawURL, &store.Options{Name: "other", Codec: codec})
			if err != nil {
				return err
			}
			return s.Close()
		}},
	}
	for _, w := range writes {
		for _, tc := range []struct {
			name  string
			query string
			// stop ends the write's wait, given the cancel of its
			// context; nil waits for the read.
			stop func(cancel context.CancelFunc)
			want error
		}{
			{"after the read", "", nil, nil},
			{"context ends", "", func(cancel context.CancelFunc) { cancel() }, context.Canceled},
			{"lock timeout", "?lock_timeout=50ms", func(context.CancelFunc) {}, store.ErrInUse},
		} {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "cache.db")
				u := &url.URL{Scheme: Scheme, Path: path}
				if err := Raw().Import(t.Context(), u, store.Info{Name: "pods", Codec: codec.Name(), Type: codec.Type()}, oneRecord("ns/a")); err != nil {
					t.Fatal(err)
				}

				// An export holds the file open read-only until released.
				inside, release := make(chan struct{}), make(chan struct{})
				exported := make(chan error, 1)
				go func() {
					_, err := Raw().Export(t.Context(), u, "pods", func(store.Record) error {
						close(inside)
						<-release
						return nil
					})
					exported <- err
				}()
				released := false
				defer func() {
					if !released {
						close(release)
						if err := <-exported; err != nil {
							t.Errorf("Export: %v", err)
						}
					}
				}()
				<-inside
				f, _, _ := files.Lookup(path)
				if f == nil || !f.readOnly {
					t.Fatalf("the export's open of the file: %+v; want a read-only one", f)
				}
				// Set before the write starts and cleared after it ends.
				waiting := make(chan struct{})
				var once sync.Once
				testHookWaitReadOnly = func(p string) {
					if p == path {
						once.Do(func() { close(waiting) })
					}
				}
				defer func() { testHookWaitReadOnly = nil }()

				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				wrote := make(chan error, 1)
				go func() { wrote <- w.run(ctx, u.String()+tc.query) }()
				select {
				case <-waiting:
				case err := <-wrote:
					t.Fatalf("%s of a file a read has open read-only did not wait for the read: %v", w.name, err)
				}
				var werr error
				if tc.stop != nil {
					tc.stop(cancel)
					werr = <-wrote
				}
				released = true
				close(release)
				if err := <-exported; err != nil {
					t.Fatalf("Export: %v", err)
				}
				if tc.stop == nil {
					werr = <-wrote
				}
				if tc.want == nil {
					if werr != nil {
						t.Fatalf("%s after the export: %v", w.name, werr)
					}
				} else {
					if !errors.Is(werr, tc.want) {
						t.Fatalf("%s while the export reads: %v; want %v", w.name, werr, tc.want)
					}
					t.Logf("error: %v", werr)
				}

				infos, err := Raw().Stores(t.Context(), u)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, i := range infos {
					names = append(names, i.Name)
				}
				slices.Sort(names)
				want := []string{"other", "pods"}
				if tc.want != nil {
					want = []string{"pods"}
				}
				if !slices.Equal(names, want) {
					t.Errorf("stores %q; want %q", names, want)
				}
			})
		}
	}
}

// TestOpenRetriesLock checks that an open waiting for a file another open
// holds gets it once that open closes it. (bbolt's flock locks belong to
// open file descriptions, so the test's own bbolt open conflicts.)
func TestOpenRetriesLock(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		run  func(u *url.URL) error
	}{
		{"Stores", func(u *url.URL) error { _, err := Raw().Stores(t.Context(), u); return err }},
		{"Import", func(u *url.URL) error {
			return Raw().Import(t.Context(), u, store.Info{Name: "other", Codec: codec.Name(), Type: codec.Type()}, oneRecord("ns/b"))
		}},
	} {
		t.Run(op.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			u := &url.URL{Scheme: Scheme, Path: path, RawQuery: "lock_timeout=1m"}
			if err := Raw().Import(t.Context(), u, store.Info{Name: "pods", Codec: codec.Name(), Type: codec.Type()}, oneRecord("ns/a")); err != nil {
				t.Fatal(err)
			}
			held, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			busy := 0
			testHookLockBusy = func(p string) {
				if busy++; busy == 1 && p == path {
					if err := held.Close(); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { testHookLockBusy = nil }()
			if err := op.run(u); err != nil {
				t.Fatalf("%s once the file was released: %v", op.name, err)
			}
			if busy == 0 {
				t.Fatalf("%s did not find the file locked; the test needs it to wait", op.name)
			}
		})
	}
}

// TestLockWaitBlocksNoOtherDatabase: see
// storetest.CheckLockWaitBlocksNoOtherDatabase. (bbolt's flock locks belong
// to open file descriptions, so the test's own bbolt open conflicts.)
func TestLockWaitBlocksNoOtherDatabase(t *testing.T) {
	storetest.CheckLockWaitBlocksNoOtherDatabase(t,
		func(path string) string { return "bolt://" + path },
		func(t *testing.T, path string) func() {
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := db.Close(); err != nil {
					t.Error(err)
				}
			}
		})
}

func oneRecord(key string) func() (store.Record, error) {
	done := false
	return func() (store.Record, error) {
		if done {
			return store.Record{}, io.EOF
		}
		done = true
		return store.Record{Key: key, Data: []byte("{}")}, nil
	}
}

// TestOpenOfReplacedFile checks an open that loses a race with a Compact
// of another process: bbolt opened the file, then the path got the
// compacted copy before bbolt had the lock. The store must be the file the
// path names, not the unlinked old one, whose writes would be lost; a path
// replaced again and again fails with ErrLocked rather than loop.
func TestOpenOfReplacedFile(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, copyPath := filepath.Join(dir, "cache.db"), filepath.Join(dir, "copy.db")
	o := store.Options{Name: "pods", Codec: codec}
	for p, name := range map[string]string{path: "old", copyPath: "copy"} {
		s, err := store.Open(t.Context(), "bolt://"+p, &o)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	opens := 0
	testHookOpened = func(p string) {
		if opens++; opens == 1 && p == path {
			if err := os.Rename(copyPath, path); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookOpened = nil }()
	s, err := store.Open(t.Context(), "bolt://"+path, &o)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ListKeys(); !slices.Equal(got, []string{"ns/copy"}) {
		t.Errorf("store opened across a replacement holds %q; want the new file's [ns/copy]", got)
	}
	if opens != 2 {
		t.Errorf("bbolt opened the file %d times; want 2 (the replaced file, then the path again)", opens)
	}
	if err := s.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testHookOpened = nil
	s, err = store.Open(t.Context(), "bolt://"+path, &o)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ListKeys(); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"ns/copy", "ns/new"}) {
		t.Errorf("after reopening: %q; want the write made after the replacement, in the file the path names", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Replaced at every open: give up.
	testHookOpened = func(p string) {
		data, err := os.ReadFile(p)
		if err == nil {
			err = os.WriteFile(p+".copy", data, 0o600)
		}
		if err == nil {
			err = os.Rename(p+".copy", p)
		}
		if err != nil {
			t.Error(err)
		}
	}
	if _, err := store.Open(t.Context(), "bolt://"+path, &o); !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("open of a file replaced at every attempt: %v; want ErrLocked saying it was replaced", err)
	}
}

// TestListStoresNamesUnreadable checks that a store of another format
// version, and one with a damaged metadata record, are listed by name with
// their errors beside the readable store (storetest.CheckUnreadableListed).
func TestListStoresNamesUnreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	for _, name := range []string{"c-damaged", "a-readable", "b-newer"} {
		o := entriesOptions(t, 0)
		o.Name = name
		s, err := open(t.Context(), path, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(pod("ns", name, "app", "1")); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	editFile(t, path, func(tx *bbolt.Tx) error {
		root := tx.Bucket(bucketStores)
		meta := root.Bucket([]byte("b-newer")).Bucket(bucketMeta)
		var m map[string]interface{}
		rec, ok := recsum.Open(keyMeta, meta.Get(keyMeta))
		if !ok {
			return fmt.Errorf("metadata record of b-newer: bad frame")
		}
		if err := json.Unmarshal(rec, &m); err != nil {
			return err
		}
		m["formatVersion"] = 99
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := meta.Put(keyMeta, seal(keyMeta, data)); err != nil {
			return err
		}
		return root.Bucket([]byte("c-damaged")).Bucket(bucketMeta).Put(keyMeta, []byte("{not json"))
	})
	storetest.CheckUnreadableListed(t, (&url.URL{Scheme: Scheme, Path: path}).String(), "a-readable", "b-newer", "c-damaged")
}
