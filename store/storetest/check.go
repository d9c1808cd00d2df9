package storetest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
)

// CheckIndexes checks that s's indexes agree with its objects (DESIGN
// invariant 7): for every index and value, IndexKeys equals the keys of the
// stored objects whose index function yields that value, ByIndex returns that
// many objects, and ListIndexFuncValues is exactly the set of values with at
// least one key. It also checks that List and ListKeys agree with GetByKey.
// Failures are reported with t.Errorf.
func CheckIndexes(t testing.TB, s store.Store) {
	t.Helper()
	keys := s.ListKeys()
	sort.Strings(keys)
	if n := len(s.List()); n != len(keys) {
		t.Errorf("CheckIndexes: List returned %d objects, ListKeys %d keys", n, len(keys))
	}
	objs := make(map[string]interface{}, len(keys))
	for _, k := range keys {
		obj, ok, err := s.GetByKey(k)
		if err != nil || !ok {
			t.Errorf("CheckIndexes: GetByKey(%q) of a listed key = %v, %v; want the object", k, ok, err)
			continue
		}
		objs[k] = obj
	}
	for name, fn := range s.GetIndexers() {
		want := map[string][]string{}
		for _, k := range keys {
			obj, ok := objs[k]
			if !ok {
				continue
			}
			vals, err := fn(obj)
			if err != nil {
				t.Errorf("CheckIndexes: index %q of stored object %q: %v", name, k, err)
				continue
			}
			for _, v := range slices.Compact(slices.Sorted(slices.Values(vals))) {
				want[v] = append(want[v], k)
			}
		}
		wantValues := slices.Sorted(maps.Keys(want))
		gotValues := slices.Sorted(slices.Values(s.ListIndexFuncValues(name)))
		if diff := cmp.Diff(wantValues, gotValues, nilEmpty); diff != "" {
			t.Errorf("CheckIndexes: ListIndexFuncValues(%q) differs from the values of the stored objects (-want +got):\n%s", name, diff)
		}
		for _, v := range wantValues {
			got, err := s.IndexKeys(name, v)
			if err != nil {
				t.Errorf("CheckIndexes: IndexKeys(%q, %q): %v", name, short(v), err)
				continue
			}
			if diff := cmp.Diff(want[v], slices.Sorted(slices.Values(got))); diff != "" {
				t.Errorf("CheckIndexes: IndexKeys(%q, %q) differs from the stored objects with that value (-want +got):\n%s", name, short(v), diff)
			}
			objs, err := s.ByIndex(name, v)
			if err != nil || len(objs) != len(want[v]) {
				t.Errorf("CheckIndexes: ByIndex(%q, %q) = %d objects, %v; want %d", name, short(v), len(objs), err, len(want[v]))
			}
		}
	}
}

// nilEmpty makes nil and empty slices equal.
var nilEmpty = cmp.FilterValues(func(x, y []string) bool { return len(x) == 0 && len(y) == 0 }, cmp.Comparer(func(_, _ []string) bool { return true }))

// short abbreviates very long strings (64 KiB keys) in messages.
func short(s string) string {
	if len(s) <= 80 {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:60], len(s))
}

// CheckUnreadableListed checks store.ListStores and store.Stores on the
// database at rawURL, which holds exactly three stores: readable, one of
// another format version (newer) and one whose metadata is damaged
// (damaged). ListStores must list all three in name order, the readable one
// with its Info and the others with errors wrapping store.ErrIncompatible
// and store.ErrCorrupt, the first naming the store and its version (99);
// Stores must fail with the error of the first unreadable store in name
// order.
func CheckUnreadableListed(t testing.TB, rawURL, readable, newer, damaged string) {
	t.Helper()
	entries, err := store.ListStores(t.Context(), rawURL)
	if err != nil {
		t.Fatalf("ListStores: %v", err)
	}
	kind := func(err error) string {
		switch {
		case err == nil:
			return "readable"
		case errors.Is(err, store.ErrIncompatible):
			return "incompatible"
		case errors.Is(err, store.ErrCorrupt):
			return "corrupt"
		}
		return fmt.Sprintf("unexpected error %v", err)
	}
	got := map[string]string{}
	var order []string
	for _, e := range entries {
		got[e.Info.Name] = kind(e.Err)
		order = append(order, e.Info.Name)
	}
	want := map[string]string{readable: "readable", newer: "incompatible", damaged: "corrupt"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ListStores: the stores and what is wrong with them (-want +got):\n%s", diff)
	}
	if !slices.IsSorted(order) {
		t.Errorf("ListStores listed %q, not in name order", order)
	}
	for _, e := range entries {
		switch e.Info.Name {
		case readable:
			if e.Info.Codec == "" || len(e.Info.Indexes) == 0 {
				t.Errorf("ListStores: the readable store has Info %+v; want its whole Info", e.Info)
			}
		case newer:
			if msg := e.Err.Error(); !strings.Contains(msg, newer) || !strings.Contains(msg, "format version 99") {
				t.Errorf("ListStores: the newer store's error %q does not name the store and its version", msg)
			}
		}
	}
	first := min(newer, damaged)
	if _, err := store.Stores(t.Context(), rawURL); err == nil || !strings.Contains(err.Error(), first) || kind(err) != want[first] {
		t.Errorf("Stores: %v; want the error of %s, the first unreadable store", err, first)
	}
}

// Records returns an Import source (see store.RawDriver.Import) that
// yields recs, then io.EOF.
func Records(recs ...store.Record) func() (store.Record, error) {
	return func() (store.Record, error) {
		if len(recs) == 0 {
			return store.Record{}, io.EOF
		}
		r := recs[0]
		recs = recs[1:]
		return r, nil
	}
}

// DirListing describes every entry under dir: its mode, and the contents
// of regular files, so that comparing two listings shows any change an
// operation made to a directory it must leave alone.
func DirListing(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += " " + string(data)
		}
		out[path] = desc
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	return out
}

// DecodeCounter is a codec that counts its decodes, to check what a store
// decodes (a bounded mode's reads, a backfill).
type DecodeCounter struct {
	store.Codec
	Decodes atomic.Int64
}

// Decode counts the call and decodes with the wrapped codec.
func (c *DecodeCounter) Decode(data []byte) (interface{}, error) {
	c.Decodes.Add(1)
	return c.Codec.Decode(data)
}

// CheckLockWaitBlocksNoOtherDatabase checks that an Open waiting for
// another process's lock holds up nothing else in this process. url(path)
// is the URL of the backend's database at path (a file or a directory
// under a fresh directory); hold(path) takes the database's lock as
// another process would (a lock of this process through another open file
// description conflicts the same way) and returns its release. While an
// Open of the held database waits, a store of another database opens,
// works and closes, and a second Open of the held database waits too;
// once the lock is released, both open, sharing the database.
func CheckLockWaitBlocksNoOtherDatabase(t *testing.T, url func(path string) string, hold func(t *testing.T, path string) (release func())) {
	t.Helper()
	dir := t.TempDir()
	held, other := filepath.Join(dir, "held"), filepath.Join(dir, "other")
	codec := podCodec(t)
	release := hold(t, held)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	withTimeout := func(path string) string { return withParam(url(path), "lock_timeout=1m") }
	type result struct {
		s   store.Store
		err error
	}
	openAsync := func(path, name string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			s, err := store.Open(t.Context(), withTimeout(path), &store.Options{Name: name, Codec: codec})
			ch <- result{s, err}
		}()
		return ch
	}
	// No hook tells when the first Open waits for the lock; the second
	// either waits for the first or, if it came first, is the one waiting
	// for the lock. Both must still be waiting below, either way.
	first := openAsync(held, "pods")
	second := openAsync(held, "nodes")

	// The held database's Opens wait a minute; one that blocks the other
	// database for as long fails here first.
	select {
	case r := <-openAsync(other, "pods"):
		if r.err != nil {
			t.Fatalf("Open of another database: %v", r.err)
		}
		if err := r.s.Add(newPod("ns", "a", "1")); err != nil {
			t.Errorf("Add to the store of another database: %v", err)
		} else if _, ok, err := r.s.GetByKey("ns/a"); !ok || err != nil {
			t.Errorf("GetByKey of what was added to the store of another database: %v, %v", ok, err)
		}
		if err := r.s.Close(); err != nil {
			t.Errorf("Close of the store of another database: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open of another database waited for the lock of the held one")
	}
	select {
	case r := <-first:
		t.Fatalf("Open of the held database returned while it was held: %v", r.err)
	case r := <-second:
		t.Fatalf("second Open of the held database returned while it was held: %v", r.err)
	default:
	}

	release()
	released = true
	for i, ch := range []<-chan result{first, second} {
		r := <-ch
		if r.err != nil {
			t.Fatalf("Open %d of the held database once released: %v", i+1, r.err)
		}
		defer r.s.Close()
		if err := r.s.Add(newPod("ns", "b", "1")); err != nil {
			t.Errorf("Add through Open %d of the held database: %v", i+1, err)
		}
	}
}
