package storetest

import (
	"fmt"
	"slices"
	"sort"
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
			for _, v := range dedup(vals) {
				want[v] = append(want[v], k)
			}
		}
		var wantValues []string
		for v := range want {
			wantValues = append(wantValues, v)
		}
		sort.Strings(wantValues)
		gotValues := slices.Clone(s.ListIndexFuncValues(name))
		sort.Strings(gotValues)
		if diff := cmp.Diff(wantValues, gotValues, nilEmpty); diff != "" {
			t.Errorf("CheckIndexes: ListIndexFuncValues(%q) differs from the values of the stored objects (-want +got):\n%s", name, diff)
		}
		for _, v := range wantValues {
			got, err := s.IndexKeys(name, v)
			if err != nil {
				t.Errorf("CheckIndexes: IndexKeys(%q, %q): %v", name, short(v), err)
				continue
			}
			got = slices.Clone(got)
			sort.Strings(got)
			if diff := cmp.Diff(want[v], got); diff != "" {
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

func dedup(vals []string) []string {
	if len(vals) < 2 {
		return vals
	}
	out := slices.Clone(vals)
	sort.Strings(out)
	return slices.Compact(out)
}

// short abbreviates very long strings (64 KiB keys) in messages.
func short(s string) string {
	if len(s) <= 80 {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:60], len(s))
}
