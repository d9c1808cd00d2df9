package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

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
	first := newer
	if damaged < newer {
		first = damaged
	}
	if _, err := store.Stores(t.Context(), rawURL); err == nil || !strings.Contains(err.Error(), first) || kind(err) != want[first] {
		t.Errorf("Stores: %v; want the error of %s, the first unreadable store", err, first)
	}
}
