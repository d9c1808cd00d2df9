package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// validFile returns the bytes of a small valid snapshot of two stores.
func validFile(t testing.TB) []byte {
	t.Helper()
	ctx := context.Background()
	recs := map[string][]store.Record{
		"a": {{Key: "ns/x", Data: []byte("data-x"), Values: [][]string{{"ns"}}}, {Key: "ns/y", Data: []byte("data-y"), Values: [][]string{{"ns", "other"}}}},
		"b": {{Key: "k", Data: []byte("v")}},
	}
	infos := map[string]store.Info{
		"a": {Backend: "test", Name: "a", Codec: "json", Type: "t", KeyFunc: "namespace/name", Indexes: []string{"namespace"}, ResourceVersion: "9"},
		"b": {Backend: "test", Name: "b", Codec: "json", Type: "t", KeyFunc: "namespace/name", ResourceVersion: "3"},
	}
	var sources []snapshot.Source
	for _, name := range []string{"a", "b"} {
		sources = append(sources, snapshot.Source{Name: name, Export: func(ctx context.Context, fn func(store.Record) error) (store.Info, error) {
			for _, r := range recs[name] {
				if err := fn(r); err != nil {
					return store.Info{}, err
				}
			}
			return infos[name], nil
		}})
	}
	path := filepath.Join(t.TempDir(), "valid.idb")
	if _, err := snapshot.Save(ctx, path, sources, nil); err != nil {
		t.Fatal(err)
	}
	return readFile(t, path)
}

// resum replaces the checksum trailer of b by the right one, so that a
// change to the body is seen by the structure checks, not the checksum.
func resum(b []byte) []byte {
	body := b[:len(b)-sha256.Size]
	s := sha256.Sum256(body)
	return append(bytes.Clone(body), s[:]...)
}

// offsetOf returns the offset of the first occurrence of sub in b.
func offsetOf(t testing.TB, b []byte, sub string) int {
	t.Helper()
	i := bytes.Index(b, []byte(sub))
	if i < 0 {
		t.Fatalf("%q not in the file", sub)
	}
	return i
}

func TestReadBadInput(t *testing.T) {
	valid := validFile(t)
	hostileLen := func(at string) []byte {
		// Replace the one-byte length before at by a huge varint.
		b := bytes.Clone(valid)
		i := offsetOf(t, b, at) - 1
		huge := binary.AppendUvarint(nil, 1<<62)
		out := append(append(append([]byte{}, b[:i]...), huge...), b[i+1:]...)
		return resum(out)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, store.ErrCorrupt},
		{"magic only", valid[:8], store.ErrCorrupt},
		{"truncated by one byte", valid[:len(valid)-1], store.ErrCorrupt},
		{"truncated in the middle", valid[:len(valid)/2], store.ErrCorrupt},
		{"truncated, checksum fixed", resum(valid[:len(valid)/2]), store.ErrCorrupt},
		{"flipped byte in a record", func() []byte {
			b := bytes.Clone(valid)
			b[offsetOf(t, b, "data-x")] ^= 0x01
			return b
		}(), store.ErrCorrupt},
		{"flipped byte in the checksum", func() []byte {
			b := bytes.Clone(valid)
			b[len(b)-1] ^= 0x80
			return b
		}(), store.ErrCorrupt},
		{"wrong magic", func() []byte {
			b := bytes.Clone(valid)
			b[0] = 'X'
			return resum(b)
		}(), store.ErrCorrupt},
		{"unknown format version", func() []byte {
			b := bytes.Clone(valid)
			binary.BigEndian.PutUint32(b[8:12], 99)
			return resum(b)
		}(), store.ErrIncompatible},
		{"absurd key length", hostileLen("ns/x"), store.ErrCorrupt},
		{"absurd data length", hostileLen("data-y"), store.ErrCorrupt},
		{"absurd store name length", hostileLen("a"), store.ErrCorrupt},
		{"record changed, checksum fixed", func() []byte {
			b := bytes.Clone(valid)
			b[offsetOf(t, b, "data-x")] = 'D'
			return resum(b)
		}(), store.ErrCorrupt},
		{"trailing garbage", append(bytes.Clone(valid), 0), store.ErrCorrupt},
		{"unknown block tag", func() []byte {
			b := bytes.Clone(valid)
			b[len(b)-sha256.Size-1] = 'Q' // the finish tag
			return resum(b)
		}(), store.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.idb")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := snapshot.Read(t.Context(), path, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Read: %v, want %v", err, tc.want)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(path)) {
				t.Errorf("error %q does not name the file", err)
			}
			// Restore refuses before writing: the target stays absent.
			dst := boltURL(t)
			if _, err := snapshot.Restore(t.Context(), path, dst, nil); !errors.Is(err, tc.want) {
				t.Errorf("Restore: %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(dst[len("bolt://"):]); !os.IsNotExist(err) {
				t.Errorf("a refused restore created the target: %v", err)
			}
		})
	}
}

// A restore that fails half-way (the file changed between the verification
// and the import) leaves the target store as it was.
func TestRestoreFailureLeavesTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(testing.TB) string
	}{
		{"bolt", boltURL},
		{"badger", badgerURL},
		{"memory", memoryURL},
		{"memdb", memdbURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := tc.url(t)
			ctx := t.Context()
			fill(t, dst, 10, 0, "5")
			before, err := snapshot.Status(ctx, dst, nil)
			if err != nil {
				t.Fatal(err)
			}
			src := boltURL(t)
			fill(t, src, 50, 0, "8")
			// Import straight through the driver with a source that fails
			// after 30 records.
			var recs []store.Record
			info, err := snapshot.Records(ctx, src, podsName, func(r store.Record) error {
				r.Data = bytes.Clone(r.Data)
				recs = append(recs, r)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			boom := errors.New("source failed")
			i := 0
			err = store.Import(ctx, dst, info, func() (store.Record, error) {
				if i == 30 {
					return store.Record{}, boom
				}
				i++
				return recs[i-1], nil
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Import: %v, want the source's error", err)
			}
			after, err := snapshot.Status(ctx, dst, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before.Stores, after.Stores); diff != "" {
				t.Errorf("a failed import changed the store (-before +after):\n%s", diff)
			}
			// And a complete one replaces it.
			i = 0
			err = store.Import(ctx, dst, info, func() (store.Record, error) {
				if i == len(recs) {
					return store.Record{}, io.EOF
				}
				i++
				return recs[i-1], nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := snapshot.Status(ctx, dst, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := snapshot.Status(ctx, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := got.Store(podsName), want.Store(podsName); g.ContentHash != w.ContentHash || g.Info.ResourceVersion != "8" {
				t.Errorf("after a complete import: %+v, want hash %s rv 8", g, w.ContentHash)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	valid := validFile(f)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(resum(valid[:40]))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Also with a valid checksum, so that the structure checks past
		// it are reached.
		for _, d := range [][]byte{data, resumSafe(data)} {
			m, err := snapshot.ReadFrom(context.Background(), "fuzz", bytes.NewReader(d), int64(len(d)), func(string, store.Record) error { return nil })
			if err == nil {
				if m == nil {
					t.Fatal("ReadFrom returned neither a manifest nor an error")
				}
				continue
			}
			if !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, store.ErrIncompatible) {
				t.Fatalf("ReadFrom: %v, want ErrCorrupt or ErrIncompatible", err)
			}
		}
	})
}

func resumSafe(b []byte) []byte {
	if len(b) < sha256.Size {
		return b
	}
	return resum(b)
}
