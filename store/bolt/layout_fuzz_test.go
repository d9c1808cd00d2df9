package bolt

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/informerdb/informerdb/store"
)

// FuzzKeyRecord feeds arbitrary bytes, as a keys/ bucket key and its record,
// to what reads them: decodeKeyRecord, keyOf and recordKey return their
// values or ErrCorrupt, never panic, and what they accept is what
// boltKey and encodeKeyRecord write: a long key's digest must name the
// key its record holds. The seeds, which `go test` runs, are well-formed
// records and cuts of them.
func FuzzKeyRecord(f *testing.F) {
	long := strings.Repeat("k", maxInline+1)
	for _, tc := range []struct {
		key  string
		vals [][]string
	}{
		{"ns/a", nil},
		{"ns/a", [][]string{{"web"}, {}, {"x", "y"}}},
		{long, [][]string{{"web"}}},
	} {
		rec := encodeKeyRecord(7, tc.key, tc.vals)
		f.Add(boltKey(tc.key), rec, len(tc.vals))
		f.Add(boltKey(tc.key), rec[:len(rec)-1], len(tc.vals))
	}
	// Index entry keys, the second with its length in two bytes.
	f.Add(indexEntryKey("web", 7), []byte{}, 0)
	f.Add([]byte("\x83\x00web\x00\x00\x00\x00\x00\x00\x00\x07"), []byte{}, 0)
	// A long key's record that holds another long key.
	f.Add(boltKey(long), encodeKeyRecord(7, long+"x", nil), 0)
	f.Fuzz(func(t *testing.T, k, rec []byte, want int) {
		want %= 8
		if want < 0 {
			want = -want
		}
		corruptOrNil := func(what string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("%s: %v; want ErrCorrupt or success", what, err)
			}
		}
		// An index entry key: the value's bbolt form, length-prefixed,
		// then the object's sequence number.
		if v, seq, err := splitIndexEntry(k); err == nil {
			enc := binary.BigEndian.AppendUint64(append(binary.AppendUvarint(nil, uint64(len(v))), v...), seq)
			if string(enc) != string(k) {
				t.Fatalf("splitIndexEntry(%q) = %q, %d, which make the key %q", k, v, seq, enc)
			}
		} else {
			corruptOrNil("splitIndexEntry", err)
		}
		seq, long, vals, err := decodeKeyRecord(rec, want)
		corruptOrNil("decodeKeyRecord", err)
		if _, err := recordKey(k, rec); err != nil {
			corruptOrNil("recordKey", err)
		}
		if err != nil {
			return
		}
		key, err := keyOf(k, long)
		corruptOrNil("keyOf", err)
		if err != nil {
			return
		}
		if got := boltKey(key); string(got) != string(k) {
			t.Fatalf("keyOf accepted key %.40q... (%d bytes) for bbolt key %.40q... (%d bytes), which is not its bbolt key", key, len(key), k, len(k))
		}
		if enc := encodeKeyRecord(seq, key, vals); string(enc) != string(rec) {
			t.Fatalf("decodeKeyRecord(%q) = seq %d, values %q, which encode as %q", rec, seq, vals, enc)
		}
		seq2, long2, vals2, err := decodeKeyRecord(encodeKeyRecord(seq, key, vals), want)
		if err != nil {
			t.Fatalf("decodeKeyRecord of encodeKeyRecord(%d, %.40q, %q): %v", seq, key, vals, err)
		}
		if seq2 != seq || (long2 != "") != isDigest(k) {
			t.Fatalf("record of %.40q: seq %d, full key %.40q after a round trip; want seq %d and a full key only for a digest", key, seq2, long2, seq)
		}
		if diff := cmp.Diff(vals, vals2, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("values do not survive a round trip (-decoded +again):\n%s", diff)
		}
	})
}
