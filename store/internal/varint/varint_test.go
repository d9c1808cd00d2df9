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
