package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/informerdb/informerdb/store"
)

// Manifest describes the stores of a snapshot file or of a database. It is
// a plain value.
type Manifest struct {
	// Source is the file path or the database URL.
	Source string `json:"source"`
	// FormatVersion and Created are those of a snapshot file; zero for a
	// database.
	FormatVersion int       `json:"formatVersion,omitempty"`
	Created       time.Time `json:"created,omitzero"`
	// Size is the size on disk in bytes: the file, or the database's file
	// or directory.
	Size int64 `json:"size"`
	// Stores are in the order of the file, or sorted by name.
	Stores []StoreHeader `json:"stores"`
}

// Store returns the header of the named store, or nil.
func (m *Manifest) Store(name string) *StoreHeader {
	for i := range m.Stores {
		if m.Stores[i].Info.Name == name {
			return &m.Stores[i]
		}
	}
	return nil
}

// fileReader reads a snapshot file block by block. It is not safe for
// concurrent use.
type fileReader struct {
	r   *reader
	hdr fileHeader
	// in a store's records: its name, and its header once read
	store   string
	inStore bool
	last    StoreHeader
	rec     store.Record // the last record; its Data is reused
}

// snapFile is a snapshot file open for reading, which can be read more
// than once: a caller that acts on records (Restore, Records) verifies the
// file in a first pass and acts in a second one through the same open
// file, not one renamed over the path meanwhile. It is not safe for
// concurrent use.
type snapFile struct {
	path string
	f    *os.File
	size int64 // at open: the reader checks that the file did not grow
}

// openSnapFile opens path, which must be a regular file. The caller closes
// it.
func openSnapFile(path string) (*snapFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("snapshot: open %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("snapshot: open %s: not a regular file: %w", path, store.ErrInvalid)
	}
	return &snapFile{path: path, f: f, size: fi.Size()}, nil
}

// reader returns a reader of the file from its start, read up to the first
// block. Closing the reader does not close the file.
func (sf *snapFile) reader() (*fileReader, error) {
	if _, err := sf.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("snapshot: read %s: seek to the start: %w", sf.path, err)
	}
	return newFileReader(sf.path, sf.f, sf.size)
}

// read reads and verifies the file from its start, as Read does.
func (sf *snapFile) read(ctx context.Context, fn func(name string, rec store.Record) error) (*Manifest, error) {
	fr, err := sf.reader()
	if err != nil {
		return nil, err
	}
	return readAll(ctx, fr, sf.path, fn)
}

func (sf *snapFile) Close() error { return sf.f.Close() }

// newFileReader reads the start of a snapshot of size bytes from r; name
// goes into errors.
func newFileReader(name string, r io.Reader, size int64) (*fileReader, error) {
	rd := &reader{name: name, br: bufio.NewReaderSize(r, 1<<20), sum: sha256.New(), end: size - trailerLen}
	if rd.end < int64(len(magic))+4 {
		return nil, fmt.Errorf("snapshot: read %s: %d bytes, too short to be a snapshot (truncated?): %w", name, size, store.ErrCorrupt)
	}
	fr := &fileReader{r: rd}
	var err error
	if fr.hdr, err = rd.start(); err != nil {
		return nil, err
	}
	return fr, nil
}

// nextStore moves to the next store's records and returns its name, or
// ok=false after the last store, once the checksum has been verified.
func (fr *fileReader) nextStore() (name string, ok bool, err error) {
	if fr.inStore {
		return "", false, fmt.Errorf("snapshot: read %s: records of %q not read to the end: %w", fr.r.name, fr.store, store.ErrInvalid)
	}
	tag, err := fr.r.byte("block tag")
	if err != nil {
		return "", false, err
	}
	switch tag {
	case tagBegin:
		b, err := fr.r.lp("store name", MaxKeyLen, nil)
		if err != nil {
			return "", false, err
		}
		fr.store, fr.inStore = string(b), true
		return fr.store, true, nil
	case tagFinish:
		return "", false, fr.checksum()
	}
	return "", false, fr.r.corrupt("unknown block tag 0x%02x", tag)
}

// checksum checks that the trailer follows and matches.
func (fr *fileReader) checksum() error {
	r := fr.r
	if r.left() != 0 {
		return r.corrupt("%d bytes after the last block", r.left())
	}
	want := r.sum.Sum(nil)
	got := make([]byte, trailerLen)
	if _, err := io.ReadFull(r.br, got); err != nil {
		return r.corrupt("checksum: %v", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("snapshot: read %s: checksum mismatch (file %x, contents %x): %w", r.name, got, want, store.ErrCorrupt)
	}
	// Nothing may follow: the file could have grown since it was stat'ed.
	if n, _ := r.br.Read(make([]byte, 1)); n != 0 {
		return r.corrupt("the file grew while it was read")
	}
	return nil
}

// nextRecord returns the next record of the current store, or io.EOF after
// its last record, when the store's header is in fr.last. The record's Data
// is valid until the next call.
func (fr *fileReader) nextRecord() (store.Record, error) {
	if !fr.inStore {
		return store.Record{}, io.EOF
	}
	tag, err := fr.r.byte("block tag")
	if err != nil {
		return store.Record{}, err
	}
	switch tag {
	case tagRecord:
		rec, err := fr.r.readRecord(&fr.rec)
		if err != nil {
			return store.Record{}, err
		}
		fr.rec = rec
		return rec, nil
	case tagEnd:
		var h StoreHeader
		if err := fr.r.json("store header of "+fr.store, &h); err != nil {
			return store.Record{}, err
		}
		if h.Info.Name != fr.store {
			return store.Record{}, fr.r.corrupt("store header names %q, its records %q", h.Info.Name, fr.store)
		}
		fr.last, fr.inStore = h, false
		return store.Record{}, io.EOF
	}
	return store.Record{}, fr.r.corrupt("unknown record tag 0x%02x in store %q", tag, fr.store)
}

// Read reads and verifies the snapshot at path: its structure, its checksum,
// and each store's record count and content hash against its header. fn,
// when not nil, is called for every record with its store's name before the
// checksum is known: callers that act on records verify the file first, as
// Restore does. fn must not retain rec.Data.
func Read(ctx context.Context, path string, fn func(name string, rec store.Record) error) (*Manifest, error) {
	sf, err := openSnapFile(path)
	if err != nil {
		return nil, err
	}
	defer sf.Close()
	return sf.read(ctx, fn)
}

// ReadFrom is Read for a snapshot of size bytes in r; name goes into
// errors and the manifest's Source.
func ReadFrom(ctx context.Context, name string, r io.Reader, size int64, fn func(name string, rec store.Record) error) (*Manifest, error) {
	fr, err := newFileReader(name, r, size)
	if err != nil {
		return nil, err
	}
	return readAll(ctx, fr, name, fn)
}

func readAll(ctx context.Context, fr *fileReader, path string, fn func(name string, rec store.Record) error) (*Manifest, error) {
	m := &Manifest{Source: path, FormatVersion: FormatVersion, Created: fr.hdr.Created, Size: fr.r.end + trailerLen}
	seen := map[string]bool{}
	for {
		name, ok, err := fr.nextStore()
		if err != nil {
			return nil, err
		}
		if !ok {
			return m, nil
		}
		if seen[name] {
			return nil, fr.r.corrupt("store %q appears twice", name)
		}
		if len(seen) >= maxStores {
			return nil, fr.r.corrupt("more than %d stores", maxStores)
		}
		seen[name] = true
		var h hasher
		for {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("snapshot: read %s: %w", path, err)
			}
			rec, err := fr.nextRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			h.add(rec)
			if fn != nil {
				if err := fn(name, rec); err != nil {
					return nil, err
				}
			}
		}
		if err := h.check(fr.last); err != nil {
			return nil, fr.r.corrupt("store %q: %v", name, err)
		}
		m.Stores = append(m.Stores, fr.last)
	}
}

// check compares a store's recorded header with the one computed from the
// records h was given.
func (h *hasher) check(recorded StoreHeader) error {
	computed, nIndexes := h.header(recorded.Info), len(recorded.Info.Indexes)
	badValues := h.misaligned(nIndexes)
	switch {
	case computed.ContentHash == "":
		return fmt.Errorf("duplicate key")
	case recorded.Objects != computed.Objects:
		return fmt.Errorf("header says %d objects, %d records follow", recorded.Objects, computed.Objects)
	case recorded.Bytes != computed.Bytes:
		return fmt.Errorf("header says %d bytes, the records hold %d", recorded.Bytes, computed.Bytes)
	case recorded.ContentHash != computed.ContentHash:
		return fmt.Errorf("content hash %s, the records hash to %s", recorded.ContentHash, computed.ContentHash)
	case badValues != "":
		return fmt.Errorf("record %q has index values that do not match the store's %d indexes", badValues, nIndexes)
	}
	return nil
}

// hasher computes a store's object count, byte count and content hash (see
// the package doc), holding one key and digest per record, not the data. It
// is not safe for concurrent use.
type hasher struct {
	entries []hashEntry
	bytes   int64
	// lens maps each length of Values seen to the first key with it.
	lens map[int]string
}

type hashEntry struct {
	key string
	sum [sha256.Size]byte
}

func (h *hasher) add(rec store.Record) {
	h.entries = append(h.entries, hashEntry{key: rec.Key, sum: sha256.Sum256(rec.Data)})
	h.bytes += int64(len(rec.Key) + len(rec.Data))
	if rec.Values != nil {
		if _, ok := h.lens[len(rec.Values)]; !ok {
			if h.lens == nil {
				h.lens = map[int]string{}
			}
			h.lens[len(rec.Values)] = rec.Key
		}
	}
}

// misaligned returns a key whose index values are not aligned with n
// indexes, or "". Records without values are aligned with any n: backends
// that keep no index values (memory files) export none.
func (h *hasher) misaligned(n int) string {
	for l, key := range h.lens {
		if l != n {
			return key
		}
	}
	return ""
}

// header returns the StoreHeader of the records added, with info. Its
// ContentHash is empty if two records share a key.
func (h *hasher) header(info store.Info) StoreHeader {
	return StoreHeader{Info: info, Objects: int64(len(h.entries)), Bytes: h.bytes, ContentHash: h.sum()}
}

func (h *hasher) sum() string {
	slices.SortFunc(h.entries, func(a, b hashEntry) int { return strings.Compare(a.key, b.key) })
	s := sha256.New()
	var buf []byte
	for i, e := range h.entries {
		if i > 0 && h.entries[i-1].key == e.key {
			return ""
		}
		buf = binary.AppendUvarint(buf[:0], uint64(len(e.key)))
		s.Write(buf)
		s.Write([]byte(e.key))
		s.Write(e.sum[:])
	}
	return hex.EncodeToString(s.Sum(nil))
}
