// Package varint reads the unsigned varints the persistent backends write
// in their keys and records, accepting only the shortest encoding of each
// value.
//
// encoding/binary.Uvarint also accepts longer encodings of the same value
// ("\x80\x00" for 0). A backend that took such bytes from a damaged file
// would read a key that its own encoder writes differently: a delete of
// that key would then miss the record, which would come back at the next
// open. Reading only what the encoders write keeps a record's bytes and
// its meaning one to one.
package varint

import "encoding/binary"

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
