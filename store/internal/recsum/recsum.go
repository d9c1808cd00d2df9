// Package recsum frames the records persistent backends store with a
// checksum, so that damage to a record, or to the key it is stored under,
// is found when the record is read instead of becoming another object.
//
// A framed record is the value followed by the CRC32C (Castagnoli) of the
// key and the value, 4 bytes big-endian. Covering the key catches a record
// that a damaged file shows under another key. CRC32C is computed in
// hardware on amd64 and arm64: checking every record read costs little.
package recsum

import (
	"encoding/binary"
	"hash/crc32"
)

// Size is the number of bytes the frame adds to a value.
const Size = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sum returns the checksum of the record value stored under key.
func Sum(key, value []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, value)
}

// Append appends the framed record of value, stored under key, to dst and
// returns the extended buffer.
func Append(dst, key, value []byte) []byte {
	dst = append(dst, value...)
	return binary.BigEndian.AppendUint32(dst, Sum(key, value))
}

// Seal returns the framed record of value, stored under key, in a new
// buffer.
func Seal(key, value []byte) []byte {
	return Append(make([]byte, 0, len(value)+Size), key, value)
}

// Open returns the value of the framed record rec stored under key (a
// subslice of rec), and false if rec is too short to be framed or its
// checksum does not match.
func Open(key, rec []byte) ([]byte, bool) {
	if len(rec) < Size {
		return nil, false
	}
	n := len(rec) - Size
	if binary.BigEndian.Uint32(rec[n:]) != Sum(key, rec[:n]) {
		return nil, false
	}
	return rec[:n:n], true
}
