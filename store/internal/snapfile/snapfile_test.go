package snapfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

type record struct {
	Section, Key, Data string
}

func records(recs ...[2]string) func(yield func(string, []byte) bool) {
	return func(yield func(string, []byte) bool) {
		for _, r := range recs {
			if !yield(r[0], []byte(r[1])) {
				return
			}
		}
	}
}

func sampleSections() []Section {
	return []Section{
		{
			Header: Header{Name: "pods", ResourceVersion: "42", Meta: driver.Meta{FormatVersion: 1, Codec: "protobuf", Type: "k8s.io/api/core/v1.Pod", KeyFunc: "namespace/name", Indexes: []string{"app", "namespace"}}},
			Len:    3,
			Records: records(
				[2]string{"ns/a", "data-a"},
				[2]string{"ünï/\x00🙂", strings.Repeat("z", 70000)},
				[2]string{"", ""},
			),
		},
		{Header: Header{Name: "empty"}, Len: 0},
		{Header: Header{Name: "cms", ResourceVersion: "7"}, Len: 1, Records: records([2]string{"k", "v"})},
	}
}

func readAll(t *testing.T, path string) ([]Header, []record, error) {
	t.Helper()
	var got []record
	hs, err := Read(path, func(h *Header, key string, data []byte) error {
		got = append(got, record{h.Name, key, string(data)})
		return nil
	})
	return hs, got, err
}

func TestWriteRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub", "dir")
	path := filepath.Join(dir, "db.snap")
	secs := sampleSections()
	if err := Write(path, secs); err != nil {
		t.Fatalf("Write: %v", err)
	}
	hs, got, err := readAll(t, path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	wantH := []Header{secs[0].Header, secs[1].Header, secs[2].Header}
	if diff := cmp.Diff(wantH, hs); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	want := []record{
		{"pods", "ns/a", "data-a"},
		{"pods", "ünï/\x00🙂", strings.Repeat("z", 70000)},
		{"pods", "", ""},
		{"cms", "k", "v"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o600 {
		t.Errorf("file mode %v; want 0600", m)
	}
	dst, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := dst.Mode().Perm(); m != 0o700 {
		t.Errorf("created directory mode %v; want 0700", m)
	}
	// Overwrite: the new contents replace the old, no temporary files stay.
	if err := Write(path, []Section{{Header: Header{Name: "only"}, Len: 1, Records: records([2]string{"x", "y"})}}); err != nil {
		t.Fatalf("second Write: %v", err)
	}
	hs, got, err = readAll(t, path)
	if err != nil {
		t.Fatalf("Read after overwrite: %v", err)
	}
	if diff := cmp.Diff([]Header{{Name: "only"}}, hs); diff != "" {
		t.Errorf("headers after overwrite (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]record{{"only", "x", "y"}}, got); diff != "" {
		t.Errorf("records after overwrite (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries; want only the snapshot", len(entries))
	}
}

func TestWriteInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.snap")
	if err := Write(path, sampleSections()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		secs []Section
	}{
		{"duplicate names", []Section{{Header: Header{Name: "a"}}, {Header: Header{Name: "a"}}}},
		{"Len too large", []Section{{Header: Header{Name: "a"}, Len: 2, Records: records([2]string{"k", "v"})}}},
		{"Len too small", []Section{{Header: Header{Name: "a"}, Len: 0, Records: records([2]string{"k", "v"})}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(path, tc.secs)
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("Write error = %v; want ErrInvalid", err)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("a failed Write changed the existing file")
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("a failed Write left %d files in the directory; want 1", len(entries))
			}
		})
	}
}

func TestReadMissing(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "nope.snap"), nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing file: %v; want fs.ErrNotExist", err)
	}
}

func TestReadCallbackError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.snap")
	if err := Write(path, sampleSections()); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	calls := 0
	_, err := Read(path, func(*Header, string, []byte) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("Read with a failing callback = %v after %d calls; want boom after 1", err, calls)
	}
}

// TestReadTruncated cuts a valid file at every length: each must fail with
// ErrCorrupt naming the file, without calling the callback.
func TestReadTruncated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db.snap")
	if err := Write(path, []Section{{Header: Header{Name: "a", ResourceVersion: "1"}, Len: 2, Records: records([2]string{"k1", "v1"}, [2]string{"k2", "v2"})}}); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.snap")
	for n := 0; n < len(full); n++ {
		if err := os.WriteFile(cut, full[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		called := false
		_, err := Read(cut, func(*Header, string, []byte) error { called = true; return nil })
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), cut) {
			t.Errorf("Read of the first %d of %d bytes: %v; want ErrCorrupt naming the file", n, len(full), err)
		}
		if called {
			t.Errorf("Read of the first %d bytes called the callback before verifying the checksum", n)
		}
	}
}

// TestReadBitFlips flips every bit of a valid file.
func TestReadBitFlips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.snap")
	if err := Write(path, []Section{{Header: Header{Name: "a"}, Len: 1, Records: records([2]string{"key", "value"})}}); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(full) * 8 {
		b := bytes.Clone(full)
		b[i/8] ^= 1 << (i % 8)
		_, err := read("flipped", bytes.NewReader(b), int64(len(b)), nil)
		// A flip in the version field is caught by the checksum too.
		if !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("bit %d flipped: %v; want ErrCorrupt", i, err)
		}
	}
}

// seal builds a file from body (after magic and version) with a valid
// checksum, to test what the checksum cannot catch.
func seal(version uint32, body []byte) []byte {
	b := append([]byte(magic), binary.BigEndian.AppendUint32(nil, version)...)
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func lp(s string) []byte { return append(uv(uint64(len(s))), s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestReadMalformed(t *testing.T) {
	hdr := lp(`{"name":"a"}`)
	for _, tc := range []struct {
		name string
		file []byte
		want error
	}{
		{"other format version", seal(2, cat(uv(0))), store.ErrIncompatible},
		{"bad magic", append([]byte("NOTASNAP"), seal(1, uv(0))[8:]...), store.ErrCorrupt},
		{"garbage after sections", seal(1, cat(uv(0), []byte("xx"))), store.ErrCorrupt},
		{"section count beyond file", seal(1, cat(uv(1<<40))), store.ErrCorrupt},
		{"header length beyond file", seal(1, cat(uv(1), uv(1<<20))), store.ErrCorrupt},
		{"header not JSON", seal(1, cat(uv(1), lp("{nope"), uv(0))), store.ErrCorrupt},
		{"duplicate names", seal(1, cat(uv(2), hdr, uv(0), hdr, uv(0))), store.ErrCorrupt},
		{"record count beyond file", seal(1, cat(uv(1), hdr, uv(1<<62))), store.ErrCorrupt},
		{"key length beyond file", seal(1, cat(uv(1), hdr, uv(1), uv(1<<30))), store.ErrCorrupt},
		{"data length beyond file", seal(1, cat(uv(1), hdr, uv(1), lp("k"), uv(1<<31))), store.ErrCorrupt},
		{"varint overflow", seal(1, cat(bytes.Repeat([]byte{0xff}, 11))), store.ErrCorrupt},
		{"missing records", seal(1, cat(uv(1), hdr, uv(2), lp("k"), lp("v"))), store.ErrCorrupt},
		{"empty", nil, store.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read("test.snap", bytes.NewReader(tc.file), int64(len(tc.file)), func(*Header, string, []byte) error { return nil })
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "test.snap") {
				t.Errorf("error = %v; want %v naming the file", err, tc.want)
			}
		})
	}
	// The sealed builder itself makes valid files.
	ok := seal(1, cat(uv(1), hdr, uv(1), lp("k"), lp("v")))
	var got []record
	if _, err := read("ok", bytes.NewReader(ok), int64(len(ok)), func(h *Header, k string, d []byte) error {
		got = append(got, record{h.Name, k, string(d)})
		return nil
	}); err != nil {
		t.Fatalf("valid hand-built file: %v", err)
	}
	if diff := cmp.Diff([]record{{"a", "k", "v"}}, got); diff != "" {
		t.Errorf("records of the hand-built file (-want +got):\n%s", diff)
	}
}

func FuzzRead(f *testing.F) {
	var valid bytes.Buffer
	if err := encode(&valid, []Section{
		{Header: Header{Name: "pods", ResourceVersion: "42", Meta: driver.Meta{FormatVersion: 1, Codec: "protobuf", Indexes: []string{"app"}}}, Len: 2, Records: records([2]string{"ns/a", "data"}, [2]string{"ü\x00", ""})},
		{Header: Header{Name: "empty"}},
	}); err != nil {
		f.Fatal(err)
	}
	f.Add(valid.Bytes())
	f.Add(seal(1, cat(uv(1), lp(`{"name":"a"}`), uv(1), lp("k"), lp("v"))))
	f.Add(seal(1, cat(uv(1), lp(`{"name":"a"}`), uv(1<<40))))
	f.Add([]byte(magic))
	f.Add(cat(uv(1), lp(`{"name":"x","resourceVersion":"9"}`), uv(2), lp("a"), lp("b"), lp("c"), lp("d")))
	// Mutations rarely keep the checksum valid, so each input is also read
	// sealed with a valid checksum, which fuzzes the parser behind it.
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRead(t, b)
		fuzzRead(t, seal(FormatVersion, b))
	})
}

func fuzzRead(t *testing.T, b []byte) {
	t.Helper()
	n := 0
	hs, err := read("fuzz.snap", bytes.NewReader(b), int64(len(b)), func(h *Header, key string, data []byte) error {
		n++
		return nil
	})
	if err != nil {
		if !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, store.ErrIncompatible) {
			t.Fatalf("error %v wraps neither ErrCorrupt nor ErrIncompatible", err)
		}
		return
	}
	// What reads back must write and read back the same.
	var secs []Section
	var recs []record
	if _, err := read("fuzz.snap", bytes.NewReader(b), int64(len(b)), func(h *Header, key string, data []byte) error {
		recs = append(recs, record{h.Name, key, string(data)})
		return nil
	}); err != nil {
		t.Fatalf("second read: %v", err)
	}
	for _, h := range hs {
		var mine [][2]string
		for _, r := range recs {
			if r.Section == h.Name {
				mine = append(mine, [2]string{r.Key, r.Data})
			}
		}
		secs = append(secs, Section{Header: h, Len: len(mine), Records: records(mine...)})
	}
	var buf bytes.Buffer
	if err := encode(&buf, secs); err != nil {
		t.Fatalf("rewrite of a readable file: %v", err)
	}
	var again []record
	if _, err := read("again.snap", bytes.NewReader(buf.Bytes()), int64(buf.Len()), func(h *Header, key string, data []byte) error {
		again = append(again, record{h.Name, key, string(data)})
		return nil
	}); err != nil {
		t.Fatalf("read of the rewrite: %v", err)
	}
	if diff := cmp.Diff(recs, again, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("records differ after a rewrite (-first +second):\n%s", diff)
	}
	if n != len(recs) {
		t.Errorf("callback count %d, records %d", n, len(recs))
	}
}
