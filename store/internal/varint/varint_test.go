package varint

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestUvarintAcceptsWhatAppendUvarintWrites(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 255, 16383, 16384, 1 << 35, math.MaxUint64 - 1, math.MaxUint64} {
		b := binary.AppendUvarint(nil, v)
		got, n := Uvarint(append(b, 0x7f)) // with a byte after it
		if got != v || n != len(b) {
			t.Errorf("Uvarint(%x) = %d, %d; want %d, %d", b, got, n, v, len(b))
		}
	}
}

func TestUvarintRejectsLongerEncodings(t *testing.T) {
	for _, tc := range []struct {
		in []byte
		n  int
	}{
		{[]byte{0x80, 0x00}, -2},             // 0 in two bytes
		{[]byte{0x81, 0x80, 0x00}, -3},       // 1 in three bytes
		{[]byte{0xff, 0x80, 0x80, 0x00}, -4}, // 127 in four bytes
		{[]byte{0x80}, 0},                    // cut
		{[]byte{}, 0},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, -10}, // overflow
	} {
		if v, n := Uvarint(tc.in); n != tc.n {
			t.Errorf("Uvarint(%x) = %d, %d; want n = %d", tc.in, v, n, tc.n)
		}
	}
}

// FuzzUvarint checks that Uvarint accepts exactly the encodings
// binary.AppendUvarint writes.
func FuzzUvarint(f *testing.F) {
	f.Add([]byte{0x80, 0x00})
	f.Add([]byte{0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n := Uvarint(b)
		if n <= 0 {
			if w, m := binary.Uvarint(b); m > 0 && string(binary.AppendUvarint(nil, w)) == string(b[:m]) {
				t.Fatalf("Uvarint(%x) refused the shortest encoding of %d", b, w)
			}
			return
		}
		if enc := binary.AppendUvarint(nil, v); string(enc) != string(b[:n]) {
			t.Fatalf("Uvarint(%x) = %d from %d bytes, which encodes as %x", b, v, n, enc)
		}
	})
}

func TestValuesRoundTrip(t *testing.T) {
	for _, vals := range [][][]string{nil, {nil}, {{"a"}}, {{"web", "db"}, nil, {""}}, {{"\x00", "long" + string(make([]byte, 300))}}} {
		b := AppendValues(nil, vals)
		if len(b) > ValuesSize(vals) {
			t.Errorf("AppendValues(%q) wrote %d bytes, more than ValuesSize %d", vals, len(b), ValuesSize(vals))
		}
		got, err := Values(b, len(vals))
		if err != nil {
			t.Fatalf("Values(AppendValues(%q)): %v", vals, err)
		}
		if len(got) != len(vals) {
			t.Fatalf("Values(AppendValues(%q)) = %q", vals, got)
		}
		for i := range vals {
			if len(got[i]) != len(vals[i]) || (got[i] == nil) != (len(vals[i]) == 0) {
				t.Fatalf("Values(AppendValues(%q)) = %q; want the same, nil for no values", vals, got)
			}
			for j := range vals[i] {
				if got[i][j] != vals[i][j] {
					t.Fatalf("Values(AppendValues(%q)) = %q", vals, got)
				}
			}
		}
	}
}

func TestValuesRejectsMalformed(t *testing.T) {
	good := AppendValues(nil, [][]string{{"x", "yy"}})
	for _, tc := range []struct {
		in   []byte
		want int
	}{
		{nil, 1},
		{good, 2},                     // another number of indexes
		{good[:len(good)-1], 1},       // cut in a value
		{append(good, 0), 1},          // trailing byte
		{[]byte{1, 0x80, 0x00}, 1},    // a value count in two bytes
		{[]byte{1, 5, 1, 'a'}, 1},     // more values than bytes
		{[]byte{1, 1, 0x80, 0x00}, 1}, // a value length in two bytes
		{[]byte{0x80, 0x00}, 0},       // the index count in two bytes
	} {
		if vals, err := Values(tc.in, tc.want); err == nil {
			t.Errorf("Values(%q, %d) = %q; want an error", tc.in, tc.want, vals)
		}
	}
	if _, _, ok := String([]byte{3, 'a'}); ok {
		t.Error("String of a cut string succeeded")
	}
}
