package bench_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/test/bench"
)

func TestReplaceSection(t *testing.T) {
	const doc = "# title\n<!-- begin t -->\nold\nrows\n<!-- end t -->\nafter\n"
	for _, tc := range []struct {
		name, doc, section, body, want string
		wantErr                        bool
	}{
		{name: "replaces", doc: doc, section: "t", body: "new\n", want: "# title\n<!-- begin t -->\nnew\n<!-- end t -->\nafter\n"},
		{name: "empty body", doc: doc, section: "t", body: "", want: "# title\n<!-- begin t -->\n<!-- end t -->\nafter\n"},
		{name: "unknown section", doc: doc, section: "u", body: "x", wantErr: true},
		{name: "end before begin", doc: "<!-- end t -->\n<!-- begin t -->\n", section: "t", body: "x", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bench.ReplaceSection(tc.doc, tc.section, tc.body)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ReplaceSection error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReplaceSection (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStoreURL(t *testing.T) {
	for _, tc := range []struct {
		backend, want string
		wantErr       bool
	}{
		{backend: "bolt", want: "bolt:///d/cache.db"},
		{backend: "bolt?cache=1000", want: "bolt:///d/cache.db?cache=1000"},
		{backend: "badger", want: "badger:///d/badger"},
		{backend: "memdb-file", want: "memdb:///d/cache.snap"},
		{backend: "memory-file", want: "memory:///d/cache.snap"},
		{backend: "memory", wantErr: true}, // not persistent: nothing to restart on
		{backend: "", wantErr: true},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			got, err := bench.StoreURL(tc.backend, "/d")
			if (err != nil) != tc.wantErr {
				t.Fatalf("StoreURL(%q) error = %v, want error %v", tc.backend, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("StoreURL(%q) (-want +got):\n%s", tc.backend, diff)
			}
		})
	}
}
