package snapfile

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"iter"
	"os"
	"path/filepath"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// FormatVersion is the version of the file layout written by Write.
const FormatVersion = 1

const magic = "IDBSNAP\n"

// Bounds on lengths read from a file, so a corrupt length fails cleanly
// instead of asking for absurd allocations. Every length is also checked
// against the bytes left in the file.
const (
	MaxHeaderLen = 16 << 20
	MaxKeyLen    = 16 << 20
	MaxDataLen   = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header identifies one store in a snapshot. It is a plain value: safe for
// concurrent reads, not for concurrent writes.
type Header struct {
	// Name is the store's name; unique within a file.
	Name string `json:"name"`
	// Meta is the store's identity, compared with driver.CompareMeta on
	// reopen.
	Meta driver.Meta `json:"meta"`
	// ResourceVersion is the resume point the records reflect.
	ResourceVersion string `json:"resourceVersion"`
}

// Section is one store to write: its header and its records. Write ranges
// over Records once, from the calling goroutine; Records must not change
// while Write runs.
type Section struct {
	Header
	// Len is the number of records Records yields.
	Len int
	// Records yields each key and encoded object once.
	Records iter.Seq2[string, []byte]
}

// Write writes sections to path atomically (see Durability in the package
// doc). The file is created with mode 0600, and its directory with 0700 if
// missing.
func Write(path string, sections []Section) (err error) {
	fail := func(what string, err error) error {
		return fmt.Errorf("snapfile: write %s: %s: %w", path, what, err)
	}
	seen := make(map[string]bool, len(sections))
	for _, s := range sections {
		if seen[s.Name] {
			return fail("section "+s.Name, fmt.Errorf("duplicate name: %w", store.ErrInvalid))
		}
		seen[s.Name] = true
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fail("create directory", err)
	}
	return WriteFile(path, "snapfile: write "+path, nil, func(f *os.File) error {
		if err := encode(f, sections); err != nil {
			return fail("write", err)
		}
		return nil
	})
}

// WriteFile writes the file at path atomically: write fills a new temporary
// file beside it (path+".part-*", mode 0600, created with O_EXCL so that
// writers do not share it and a planted symbolic link is not followed),
// which is then fsynced, renamed over path, and its directory fsynced.
// created, when not nil, is called with the temporary file's path once it
// exists. On an error the temporary file is removed; write's errors are
// returned as they are, those of the other steps prefixed with op.
func WriteFile(path, op string, created func(part string), write func(f *os.File) error) (err error) {
	fail := func(what string, err error) error { return fmt.Errorf("%s: %s: %w", op, what, err) }
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".part-*")
	if err != nil {
		return fail("create temporary file", err)
	}
	if created != nil {
		created(f.Name())
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fail("chmod", err)
	}
	if err := write(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		return fail("close", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fail("rename", err)
	}
	// Some file systems cannot fsync a directory (EINVAL): nothing more
	// can be done there.
	if err := syncDir(filepath.Dir(path)); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fail("fsync directory", err)
	}
	return nil
}

// encode writes the snapshot of sections, checksum included, to w.
func encode(dst io.Writer, sections []Section) error {
	w := NewWriter(dst, crc32.New(castagnoli))
	w.Raw([]byte(magic))
	w.Raw(binary.BigEndian.AppendUint32(nil, FormatVersion))
	w.Uvarint(uint64(len(sections)))
	for _, s := range sections {
		h, err := json.Marshal(s.Header)
		if err != nil {
			return fmt.Errorf("header of %s: %w", s.Name, err)
		}
		w.Bytes(h)
		w.Uvarint(uint64(s.Len))
		n := 0
		if s.Records != nil {
			for k, v := range s.Records {
				n++
				w.Bytes([]byte(k))
				w.Bytes(v)
			}
		}
		if n != s.Len {
			return fmt.Errorf("section %s: Records yielded %d records, Len says %d: %w", s.Name, n, s.Len, store.ErrInvalid)
		}
	}
	return w.Finish()
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Writer writes the fields of a file through a buffer and hashes them
// with a checksum that Finish appends: this package's format and
// store/snapshot's. Its first error sticks: later writes do nothing. It is
// not safe for concurrent use.
type Writer struct {
	dst io.Writer
	bw  *bufio.Writer
	sum hash.Hash
	buf [binary.MaxVarintLen64]byte
	err error
}

// NewWriter returns a Writer to dst whose checksum is sum.
func NewWriter(dst io.Writer, sum hash.Hash) *Writer {
	return &Writer{dst: dst, bw: bufio.NewWriterSize(io.MultiWriter(dst, sum), 1<<20), sum: sum}
}

// Raw writes b.
func (w *Writer) Raw(b []byte) {
	if w.err == nil {
		_, w.err = w.bw.Write(b)
	}
}

// Uvarint writes v as an unsigned varint.
func (w *Writer) Uvarint(v uint64) {
	w.Raw(w.buf[:binary.PutUvarint(w.buf[:], v)])
}

// Bytes writes the length of b, then b.
func (w *Writer) Bytes(b []byte) {
	w.Uvarint(uint64(len(b)))
	w.Raw(b)
}

// Fail makes err the Writer's error, unless it has one.
func (w *Writer) Fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Err returns the Writer's first error.
func (w *Writer) Err() error { return w.err }

// Finish flushes what was written, then appends the checksum (not hashed).
func (w *Writer) Finish() error {
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	if w.err != nil {
		return w.err
	}
	_, w.err = w.dst.Write(w.sum.Sum(nil))
	return w.err
}

// Read reads the snapshot at path: it verifies the checksum of the whole
// file, then calls fn for every record in file order with the header of its
// section (data is valid only during the call), and returns the headers of
// all sections. A missing file is an error wrapping os.ErrNotExist; an
// error from fn stops Read and is returned as is.
func Read(path string, fn func(h *Header, key string, data []byte) error) ([]Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("snapfile: read %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("snapfile: read %s: %w", path, err)
	}
	return read(path, f, st.Size(), fn)
}

// read is Read over the size bytes of r; name goes into errors.
func read(name string, r io.ReaderAt, size int64, fn func(h *Header, key string, data []byte) error) ([]Header, error) {
	corrupt := func(format string, args ...interface{}) error {
		return fmt.Errorf("snapfile: read %s: %s: %w", name, fmt.Sprintf(format, args...), store.ErrCorrupt)
	}
	if size < int64(len(magic))+4+1+4 {
		return nil, corrupt("file of %d bytes is too short to be a snapshot", size)
	}
	body := size - 4
	// Pass 1: the checksum, so that fn never sees data of a damaged file.
	crc := crc32.New(castagnoli)
	if _, err := io.Copy(crc, io.NewSectionReader(r, 0, body)); err != nil {
		return nil, fmt.Errorf("snapfile: read %s: %w", name, err)
	}
	var trailer [4]byte
	if _, err := r.ReadAt(trailer[:], body); err != nil {
		return nil, fmt.Errorf("snapfile: read %s: checksum: %w", name, err)
	}
	var hdr [len(magic) + 4]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("snapfile: read %s: %w", name, err)
	}
	if string(hdr[:len(magic)]) != magic {
		return nil, corrupt("not a snapshot file (bad magic %q)", hdr[:len(magic)])
	}
	if got, want := binary.BigEndian.Uint32(trailer[:]), crc.Sum32(); got != want {
		return nil, corrupt("checksum mismatch (stored %08x, computed %08x): the file is truncated or damaged", got, want)
	}
	if v := binary.BigEndian.Uint32(hdr[len(magic):]); v != FormatVersion {
		return nil, fmt.Errorf("snapfile: read %s: format version %d, this build reads %d: %w", name, v, FormatVersion, store.ErrIncompatible)
	}
	// Pass 2: parse.
	p := &parser{r: bufio.NewReaderSize(io.NewSectionReader(r, int64(len(hdr)), body-int64(len(hdr))), 1<<20), left: body - int64(len(hdr))}
	nsec, err := p.uvarint("section count", uint64(p.left))
	if err != nil {
		return nil, corrupt("%v", err)
	}
	var headers []Header
	names := map[string]bool{}
	var data []byte
	for i := uint64(0); i < nsec; i++ {
		hb, err := p.bytes("header", MaxHeaderLen, nil)
		if err != nil {
			return nil, corrupt("section %d: %v", i, err)
		}
		var h Header
		if err := json.Unmarshal(hb, &h); err != nil {
			return nil, corrupt("section %d: header: %v", i, err)
		}
		if names[h.Name] {
			return nil, corrupt("section %d: duplicate store name %q", i, h.Name)
		}
		names[h.Name] = true
		n, err := p.uvarint("record count", uint64(p.left)/2)
		if err != nil {
			return nil, corrupt("section %q: %v", h.Name, err)
		}
		for j := uint64(0); j < n; j++ {
			kb, err := p.bytes("key", MaxKeyLen, nil)
			if err != nil {
				return nil, corrupt("section %q record %d: %v", h.Name, j, err)
			}
			key := string(kb)
			data, err = p.bytes("data", MaxDataLen, data)
			if err != nil {
				return nil, corrupt("section %q record %d (%.80q): %v", h.Name, j, key, err)
			}
			if fn != nil {
				if err := fn(&h, key, data); err != nil {
					return nil, err
				}
			}
		}
		headers = append(headers, h)
	}
	if p.left != 0 {
		return nil, corrupt("%d bytes of garbage after the last section", p.left)
	}
	return headers, nil
}

type parser struct {
	r    *bufio.Reader
	left int64 // bytes left before the checksum
}

func (p *parser) uvarint(what string, max uint64) (uint64, error) {
	v, err := binary.ReadUvarint(&countingReader{p})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if v > max {
		return 0, fmt.Errorf("%s %d exceeds the bound %d", what, v, max)
	}
	return v, nil
}

// bytes reads a length-prefixed byte string into buf's storage when it fits.
func (p *parser) bytes(what string, max int64, buf []byte) ([]byte, error) {
	n, err := p.uvarint(what+" length", uint64(min(max, p.left)))
	if err != nil {
		return nil, err
	}
	if uint64(cap(buf)) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(p.r, buf); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	p.left -= int64(n)
	return buf, nil
}

type countingReader struct{ p *parser }

func (c *countingReader) ReadByte() (byte, error) {
	if c.p.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	b, err := c.p.r.ReadByte()
	switch {
	case err == nil:
		c.p.left--
	case errors.Is(err, io.EOF):
		// The checksum still follows: a file ending here is cut short.
		err = io.ErrUnexpectedEOF
	}
	return b, err
}
