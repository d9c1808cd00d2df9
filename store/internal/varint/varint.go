// Package varint reads the unsigned varints the persistent backends write
// in their keys and records, accepting only the shortest encoding of each
// value, and writes and reads the strings and index values they frame with
// them.
//
// encoding/binary.Uvarint also accepts longer encodings of the same value
// ("\x80\x00" for 0): a key read so from a damaged file would be written
// differently by the encoder, and a delete of it would miss the record.
// Reading only what the encoders write keeps bytes and meaning one to one.
package varint

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Uvarint decodes an unsigned varint from the start of b, like
// binary.Uvarint, and returns the value and the number of bytes read. It
// returns n <= 0 when b does not start with the shortest encoding of a
// value: 0 when b is too short, and a negative count (the bytes read)
// when the encoding is longer than needed or overflows 64 bits.
func Uvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return v, n
	}
	// The shortest encoding of v ends with its first byte of value 0
	// after the start, and only v == 0 may end with a zero byte.
	if n > 1 && b[n-1] == 0 {
		return 0, -n
	}
	return v, n
}

// AppendString appends s preceded by its length.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// String reads a string AppendString wrote from the start of b and returns
// it (a copy) and the rest of b; ok is false when b does not start with one.
func String(b []byte) (s string, rest []byte, ok bool) {
	n, w := Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return "", nil, false
	}
	return string(b[w : w+int(n)]), b[w+int(n):], true
}

// ValuesSize bounds the length of AppendValues' encoding of vals.
func ValuesSize(vals [][]string) int {
	n := binary.MaxVarintLen64
	for _, vs := range vals {
		n += binary.MaxVarintLen64
		for _, v := range vs {
			n += binary.MaxVarintLen64 + len(v)
		}
	}
	return n
}

// AppendValues appends an object's index values, aligned with its store's
// index names: their number, then per index the number of values and each
// value as AppendString writes it.
func AppendValues(b []byte, vals [][]string) []byte {
	b = binary.AppendUvarint(b, uint64(len(vals)))
	for _, vs := range vals {
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = AppendString(b, v)
		}
	}
	return b
}

// Values decodes the whole of b, AppendValues' encoding of the values of
// want indexes; an index without values is nil, and so are the values of
// no index. Its errors say what is malformed, for the caller to wrap.
func Values(b []byte, want int) ([][]string, error) {
	n, w := Uvarint(b)
	if w <= 0 {
		return nil, errors.New("no index count")
	}
	if n != uint64(want) {
		return nil, fmt.Errorf("%d indexes, want %d", n, want)
	}
	b = b[w:]
	var vals [][]string
	if n > 0 {
		vals = make([][]string, n)
	}
	for i := range vals {
		m, w := Uvarint(b)
		if w <= 0 || m > uint64(len(b)) {
			return nil, errors.New("value count")
		}
		b = b[w:]
		if m == 0 {
			continue
		}
		vs := make([]string, m)
		for j := range vs {
			var ok bool
			if vs[j], b, ok = String(b); !ok {
				return nil, errors.New("value length")
			}
		}
		vals[i] = vs
	}
	if len(b) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return vals, nil
}
