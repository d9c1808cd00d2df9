package badger

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzRecords feeds arbitrary bytes to the decoders of the records a
// damaged directory can hold (index values, object keys and values, index
// entries): each returns its values or errBadRecord, never panics, and
// what it decodes encodes back to the same values. The seeds, which `go
// test` runs, are well-formed records and cuts of them.
func FuzzRecords(f *testing.F) {
	long := strings.Repeat("k", maxInline+1)
	for _, vals := range [][][]string{nil, {{}}, {{"a"}}, {{"web", "db"}, {}, {""}}} {
		b := encodeValues(vals)
		f.Add(b, b[:len(b)/2], len(vals))
	}
	for _, key := range []string{"ns/a", long} {
		k := newKeys("pods", 1)
		suffix := k.obj(key)[len(k.objPrefix()):]
		v := objValue(key, []byte("data"))
		f.Add(suffix, v, 0)
		ek, ev := k.entry("app", "web", key)
		f.Add(ek[len(k.indexPrefix("app")):], ev, 1)
	}
	f.Fuzz(func(t *testing.T, a, b []byte, want int) {
		want %= 8
		if want < 0 {
			want = -want
		}
		badOrNil := func(what string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, errBadRecord) {
				t.Fatalf("%s: %v; want errBadRecord or success", what, err)
			}
		}
		for _, in := range [][]byte{a, b} {
			vals, err := decodeValues(in, want)
			badOrNil("decodeValues", err)
			if err == nil {
				if enc := encodeValues(vals); string(enc) != string(in) {
					t.Fatalf("decodeValues(%q) = %q, which encodes as %q", in, vals, enc)
				}
				again, err := decodeValues(encodeValues(vals), want)
				if err != nil {
					t.Fatalf("decodeValues of encodeValues(%q): %v", vals, err)
				}
				if diff := cmp.Diff(vals, again, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("values do not survive a round trip (-decoded +again):\n%s", diff)
				}
			}
			_, _, err = readLP(in)
			badOrNil("readLP", err)
		}
		// What the parsers accept is exactly what the encoders write for
		// the parts they return: a key or value taken from the record's
		// value must be the one its key names (by digest, when hashed).
		k := newKeys("pods", 1)
		key, data, err := parseObj(a, b)
		badOrNil("parseObj", err)
		if err == nil {
			if got := k.obj(key)[len(k.objPrefix()):]; string(got) != string(a) {
				t.Fatalf("parseObj(%q) = key %.40q, whose object key is %q", a, key, got)
			}
			if got := objValue(key, data); string(got) != string(b) {
				t.Fatalf("parseObj(%q, %q) = key %.40q and data %q, which store as %q", a, b, key, data, got)
			}
		}
		value, key, err := parseEntry(a, b)
		badOrNil("parseEntry", err)
		if err == nil {
			ek, _ := k.entry("app", value, key)
			if got := ek[len(k.indexPrefix("app")):]; string(got) != string(a) {
				t.Fatalf("parseEntry(%q) = value %.40q, key %.40q, whose entry key is %q", a, value, key, got)
			}
		}
	})
}
