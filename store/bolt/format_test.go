package bolt

import (
	"encoding/json"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// TestFormatVersion1Refused writes a store in the layout of format version
// 1 (objects and index values by key, no keys bucket): both modes and the
// raw driver refuse it with ErrIncompatible naming both versions, and the
// message says what to do.
func TestFormatVersion1Refused(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pods.db")
	o, err := (&store.Options{Name: "pods", Codec: codec, Indexers: cache.Indexers{"app": indexer.LabelIndexFunc("app")}}).WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := driver.MetaFor(o, 1)
	editFile(t, path, func(tx *bbolt.Tx) error {
		root, err := tx.CreateBucket(bucketStores)
		if err != nil {
			return err
		}
		sb, err := root.CreateBucket([]byte("pods"))
		if err != nil {
			return err
		}
		meta, err := sb.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := meta.Put(keyMeta, data); err != nil {
			return err
		}
		for _, n := range []string{"objects", "values", "index"} {
			if _, err := sb.CreateBucket([]byte(n)); err != nil {
				return err
			}
		}
		return nil
	})
	for _, mode := range []struct {
		name  string
		cache int
	}{{"default", 0}, {"bounded", 10}} {
		o := o
		o.CacheSize = mode.cache
		_, err := open(t.Context(), path, o)
		if !errors.Is(err, store.ErrIncompatible) {
			t.Fatalf("%s open: error %v; want ErrIncompatible", mode.name, err)
		}
		for _, want := range []string{"format version 1, this build reads 4", "delete", "relist", path} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s open: error %q does not say %q", mode.name, err, want)
			}
		}
	}
	u := &url.URL{Scheme: Scheme, Path: path}
	if _, err := Raw().Stores(t.Context(), u); !errors.Is(err, store.ErrIncompatible) || !containsAll(err.Error(), "store: list stores", path, "format version 1, this build reads 4") {
		t.Errorf("raw Stores: error %v; want ErrIncompatible naming the operation, the file and both versions", err)
	}
	if _, err := Raw().Export(t.Context(), u, "pods", func(store.Record) error { return nil }); !errors.Is(err, store.ErrIncompatible) || !containsAll(err.Error(), "store: export pods", path, "format version 1") {
		t.Errorf("raw Export: error %v; want ErrIncompatible naming the operation, the file and the version", err)
	}
	// Dropping the store is a way out that keeps the file's other stores:
	// it needs no more of the store than its name.
	if err := (rawDriver{}).Drop(t.Context(), u, "pods"); err != nil {
		t.Fatalf("Drop of a store of format version 1: %v", err)
	}
	if infos, err := Raw().Stores(t.Context(), u); err != nil || len(infos) != 0 {
		t.Errorf("Stores after the Drop: %+v, %v; want no store", infos, err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
