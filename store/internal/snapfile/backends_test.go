package snapfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/memdb"
	"github.com/informerdb/informerdb/store/memory"
)

// backends are those whose files are snapshot files: the tests below check
// what each must do with them.
var backends = []struct {
	scheme        string
	formatVersion int
}{
	{memory.Scheme, memory.FormatVersion},
	{memdb.Scheme, memdb.FormatVersion},
}

func TestTrailingSlashRefused(t *testing.T) {
	for _, b := range backends {
		t.Run(b.scheme, func(t *testing.T) { checkTrailingSlash(t, b.scheme) })
	}
}

// checkTrailingSlash checks that a snapshot file path ending in a slash,
// which names a directory, is refused with store.ErrInvalid by Open and the
// raw driver, and that nothing is created, rather than cleaned into the
// file path without the slash. The path without the slash opens.
func checkTrailingSlash(t *testing.T, scheme string) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.snap")
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	opts := func() *store.Options { return &store.Options{Name: "pods", Codec: codec} }
	none := func() (store.Record, error) { return store.Record{}, io.EOF }
	// closed closes a store that opened when it should not have, and
	// returns the open's error.
	closed := func(s store.Store, err error) error {
		if err == nil {
			s.Close()
		}
		return err
	}
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"Open", func() error { return closed(store.Open(t.Context(), scheme+"://"+path+"/", opts())) }},
		{"Open root", func() error { return closed(store.Open(t.Context(), scheme+"://"+"//", opts())) }},
		{"Import", func() error {
			return store.Import(t.Context(), scheme+"://"+path+"/", store.Info{Name: "pods", Codec: codec.Name()}, none)
		}},
		{"Stores", func() error {
			_, err := store.Stores(t.Context(), scheme+"://"+path+"/")
			return err
		}},
	} {
		err := tc.run()
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "ends in a slash") {
			t.Errorf("%s of a path ending in a slash = %v; want ErrInvalid saying it ends in a slash", tc.name, err)
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("%s of a path ending in a slash left %v in the directory (%v)", tc.name, ents, err)
		}
	}
	s, err := store.Open(t.Context(), scheme+"://"+path, opts())
	if err != nil {
		t.Fatalf("Open without the slash: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
