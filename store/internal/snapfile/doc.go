// Package snapfile reads and writes informerdb snapshot files: point-in-time
// copies of one or more stores (their identity, resume point and encoded
// objects) in a single file. The memory and memdb backends keep their file
// mode in them, and share it through [Backend]: URLs, the registry of the
// files open in a process, their locks ([Lock]) and periodic snapshots, and
// the raw driver (store.RawDriver) of the snapshot tool. A backend gives only
// how it holds a store's objects.
//
// # Format
//
// All integers are unsigned varints unless said otherwise.
//
//	magic "IDBSNAP\n" (8 bytes), format version (uint32 big-endian)
//	number of sections
//	per section:
//		header length, header (JSON of Header)
//		number of records
//		per record: key length, key, data length, data
//	CRC-32C (Castagnoli) of everything above (uint32 big-endian)
//
// # Durability
//
// [Write] never changes an existing file in place: it writes a temporary file
// in the same directory, fsyncs it, renames it over the target and fsyncs the
// directory, so a crash at any instant leaves either the old or the new
// snapshot, both complete.
//
// # Concurrency
//
// Functions are safe for concurrent use on different paths. Concurrent Writes
// to one path each leave a complete file; which one wins is unspecified, so
// callers serialize them.
//
// # Errors
//
// A file that is truncated, has a bad checksum, or has lengths beyond sane
// bounds yields an error wrapping store.ErrCorrupt that names the file; a
// file of another format version yields store.ErrIncompatible. Read never
// panics on bad input (it is fuzzed).
package snapfile
