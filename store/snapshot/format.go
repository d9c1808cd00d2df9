package snapshot

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// FormatVersion is the version of the file layout written by this package.
// Readers refuse other versions with store.ErrIncompatible.
const FormatVersion = 1

const magic = "IDBPORT\n"

// Block tags.
const (
	tagBegin  = 'B' // a store's records follow
	tagRecord = 'R' // one record
	tagEnd    = 'E' // the store's StoreHeader
	tagFinish = 'Z' // no more stores; the checksum follows
)

// Bounds on what a file may declare (see the package doc).
const (
	MaxHeaderLen = 16 << 20
	MaxKeyLen    = 16 << 20
	MaxDataLen   = 256 << 20
	MaxIndexes   = 1 << 12
	MaxValues    = 1 << 20
	maxStores    = 1 << 16
)

// trailerLen is the length of the SHA-256 checksum that ends a file.
const trailerLen = sha256.Size

// fileHeader is the JSON header that follows the magic and version.
type fileHeader struct {
	Created time.Time `json:"created"`
	Source  string    `json:"source,omitempty"`
}

// StoreHeader describes one store of a snapshot (see the package doc). It
// is a plain value.
type StoreHeader struct {
	// Info is the store's identity and resume point, as exported.
	Info store.Info `json:"info"`
	// Objects is the number of records.
	Objects int64 `json:"objects"`
	// Bytes is the sum of the lengths of the records' keys and data.
	Bytes int64 `json:"bytes"`
	// ContentHash is ContentHash of the records, hex.
	ContentHash string `json:"contentHash"`
}

// writer encodes a snapshot stream and hashes everything it writes.
type writer struct{ *snapfile.Writer }

func newWriter(w io.Writer) writer { return writer{snapfile.NewWriter(w, sha256.New())} }

func (w writer) json(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		w.Fail(err)
	}
	w.Bytes(b)
}

func (w writer) start(h fileHeader) {
	w.Raw([]byte(magic))
	w.Raw(binary.BigEndian.AppendUint32(nil, FormatVersion))
	w.json(h)
}

func (w writer) begin(name string) {
	w.Raw([]byte{tagBegin})
	w.Bytes([]byte(name))
}

func (w writer) record(r store.Record) {
	w.Raw([]byte{tagRecord})
	w.Bytes([]byte(r.Key))
	w.Bytes(r.Data)
	w.Uvarint(uint64(len(r.Values)))
	for _, vs := range r.Values {
		w.Uvarint(uint64(len(vs)))
		for _, v := range vs {
			w.Bytes([]byte(v))
		}
	}
}

func (w writer) end(h StoreHeader) {
	w.Raw([]byte{tagEnd})
	w.json(h)
}

// finish writes the finish tag and the checksum trailer, and flushes.
func (w writer) finish() error {
	w.Raw([]byte{tagFinish})
	return w.Finish()
}

// reader decodes a snapshot stream, bounding every length by the bytes left
// before the trailer.
type reader struct {
	name string // file name, for errors
	br   *bufio.Reader
	sum  hash.Hash
	off  int64 // bytes consumed
	end  int64 // offset of the trailer
}

// corrupt returns an error wrapping store.ErrCorrupt that names the file and
// the offset.
func (r *reader) corrupt(format string, args ...any) error {
	return fmt.Errorf("snapshot: read %s: at byte %d: %s: %w", r.name, r.off, fmt.Sprintf(format, args...), store.ErrCorrupt)
}

func (r *reader) left() int64 { return r.end - r.off }

func (r *reader) full(b []byte, what string) error {
	if int64(len(b)) > r.left() {
		return r.corrupt("%s: %d bytes past the end of the file", what, int64(len(b))-r.left())
	}
	n, err := io.ReadFull(r.br, b)
	r.off += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return r.corrupt("%s: truncated", what)
		}
		return fmt.Errorf("snapshot: read %s: %w", r.name, err)
	}
	r.sum.Write(b)
	return nil
}

func (r *reader) byte(what string) (byte, error) {
	var b [1]byte
	err := r.full(b[:], what)
	return b[0], err
}

func (r *reader) uvarint(what string, max uint64) (uint64, error) {
	var v uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := r.byte(what)
		if err != nil {
			return 0, err
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return 0, r.corrupt("%s: varint overflows", what)
			}
			v |= uint64(b) << s
			if v > max {
				return 0, r.corrupt("%s: %d exceeds the bound %d", what, v, max)
			}
			return v, nil
		}
		v |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, r.corrupt("%s: varint overflows", what)
}

// lp reads a length-prefixed byte string of at most max bytes into buf's
// storage when it is large enough.
func (r *reader) lp(what string, max uint64, buf []byte) ([]byte, error) {
	n, err := r.uvarint(what+" length", max)
	if err != nil {
		return nil, err
	}
	if int64(n) > r.left() {
		return nil, r.corrupt("%s length %d: only %d bytes left", what, n, r.left())
	}
	if uint64(cap(buf)) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	return buf, r.full(buf, what)
}

func (r *reader) json(what string, v any) error {
	b, err := r.lp(what, MaxHeaderLen, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return r.corrupt("%s: %v", what, err)
	}
	return nil
}

// start reads the magic, version and file header.
func (r *reader) start() (fileHeader, error) {
	var h fileHeader
	m := make([]byte, len(magic))
	if err := r.full(m, "magic"); err != nil {
		return h, err
	}
	if string(m) != magic {
		return h, r.corrupt("not an informerdb snapshot (magic %q)", m)
	}
	var v [4]byte
	if err := r.full(v[:], "format version"); err != nil {
		return h, err
	}
	if got := binary.BigEndian.Uint32(v[:]); got != FormatVersion {
		return h, fmt.Errorf("snapshot: read %s: format version %d, this build reads %d: %w", r.name, got, FormatVersion, store.ErrIncompatible)
	}
	return h, r.json("file header", &h)
}

// readRecord reads one record after its tag. key and data reuse the storage
// of prev when they fit, so that a caller that does not retain them reads
// without allocating per record.
func (r *reader) readRecord(prev *store.Record) (store.Record, error) {
	var rec store.Record
	k, err := r.lp("key", MaxKeyLen, nil)
	if err != nil {
		return rec, err
	}
	rec.Key = string(k)
	if rec.Data, err = r.lp("data of "+rec.Key, MaxDataLen, prev.Data[:0]); err != nil {
		return rec, err
	}
	n, err := r.uvarint("index count of "+rec.Key, MaxIndexes)
	if err != nil {
		return rec, err
	}
	if n > 0 {
		rec.Values = make([][]string, n)
	}
	for i := range rec.Values {
		// Each value takes at least one byte (its length), which bounds
		// the count by the bytes left.
		m, err := r.uvarint("value count of "+rec.Key, min(MaxValues, uint64(max(r.left(), 0))))
		if err != nil {
			return rec, err
		}
		if m == 0 {
			continue
		}
		vs := make([]string, m)
		for j := range vs {
			v, err := r.lp("index value of "+rec.Key, MaxKeyLen, nil)
			if err != nil {
				return rec, err
			}
			vs[j] = string(v)
		}
		rec.Values[i] = vs
	}
	return rec, nil
}
