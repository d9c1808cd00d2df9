package snapshot_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
	"github.com/informerdb/informerdb/store/storetest"
)

var rawBackends = []struct {
	name string
	url  func(testing.TB) string
	// values says whether the backend keeps index values.
	values bool
}{
	{"bolt", boltURL, true},
	{"badger", badgerURL, true},
	{"memory", memoryURL, false},
	{"memdb", memdbURL, false},
}

func TestRawImportRejectsBadInput(t *testing.T) {
	good := store.Info{Name: podsName, Codec: "protobuf", Type: "k8s.io/api/core/v1.Pod", KeyFunc: "namespace/name", Indexes: []string{"a", "b"}, ResourceVersion: "3"}
	for _, be := range rawBackends {
		t.Run(be.name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				info store.Info
				recs []store.Record
				// skip says the backend cannot see this problem: memory
				// files drop index values.
				needsValues bool
			}{
				{"duplicate key", good, []store.Record{
					{Key: "ns/a", Data: []byte("1"), Values: [][]string{{"x"}, nil}},
					{Key: "ns/a", Data: []byte("2"), Values: [][]string{{"y"}, nil}},
				}, false},
				{"values for too few indexes", good, []store.Record{
					{Key: "ns/a", Data: []byte("1"), Values: [][]string{{"x"}, nil}},
					{Key: "ns/b", Data: []byte("1"), Values: [][]string{{"x"}}},
				}, true},
				{"unsorted index names", func() store.Info { i := good; i.Indexes = []string{"b", "a"}; return i }(), []store.Record{
					{Key: "ns/a", Data: []byte("1"), Values: [][]string{{"x"}, nil}},
				}, true},
				{"empty store name", func() store.Info { i := good; i.Name = ""; return i }(), nil, false},
			} {
				if tc.needsValues && !be.values {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					ctx := t.Context()
					dst := be.url(t)
					fill(t, dst, 5, 0, "2")
					before, err := snapshot.Status(ctx, dst, nil)
					if err != nil {
						t.Fatal(err)
					}
					err = store.Import(ctx, dst, tc.info, storetest.Records(tc.recs...))
					if !errors.Is(err, store.ErrInvalid) {
						t.Fatalf("Import: %v, want ErrInvalid", err)
					}
					after, err := snapshot.Status(ctx, dst, nil)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(before.Stores, after.Stores); diff != "" {
						t.Errorf("a rejected import changed the database (-before +after):\n%s", diff)
					}
				})
			}
		})
	}
}

func TestRawImportRefusesOpenStore(t *testing.T) {
	for _, be := range rawBackends {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			dst := be.url(t)
			s, err := store.Open(ctx, dst, podOptions(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = store.Import(ctx, dst, store.Info{Name: podsName}, storetest.Records())
			if !errors.Is(err, store.ErrInUse) {
				t.Errorf("Import into an open store: %v, want ErrInUse", err)
			}
		})
	}
}

func TestRawMissingDatabase(t *testing.T) {
	for _, be := range rawBackends {
		t.Run(be.name, func(t *testing.T) {
			u := be.url(t)
			if _, err := store.Stores(t.Context(), u); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Stores of a missing database: %v, want ErrNotFound", err)
			}
			if _, err := store.Export(t.Context(), u, podsName, func(store.Record) error { return nil }); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Export of a missing database: %v, want ErrNotFound", err)
			}
		})
	}
}
