package badger

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/rawdb"
	"github.com/informerdb/informerdb/store/internal/recsum"
	"github.com/informerdb/informerdb/store/internal/varint"
)

// Key layout. Every store in a database owns the keys under its prefix
// 's' uvarint(len(name)) name (the length keeps "a" from prefixing "ab").
// Under it:
//
//	'm'                                      the meta record (JSON metaRecord)
//	'g' gen(8, big endian) 'o' c(key)        the encoded object
//	'g' gen 'v' c(key)                       the object's index values (encodeValues)
//	'g' gen 'i' lp(index) c(value) c(key)    an index entry (bounded mode only)
//
// where lp(x) is uvarint(len(x)) x, and c(x) is 0x00 lp(x) up to maxInline
// bytes and 0x01 sha256(x) beyond (badger keys have at most 65,000 bytes).
// A hashed string is kept whole in the value: an object's value is then
// lp(key) and the encoding, an index entry's lp(value) lp(key) (else
// empty).
//
// The value records are the persisted index, written with their objects.
// The index entries are derived from them; only the bounded mode keeps
// them, and they are read only while the meta record's Entries says they
// are current. Entries left behind a clear flag are garbage.
//
// Only the generation the meta record names is live: a write too large for
// one transaction builds a new generation and switches to it (with the
// resume point) in one final transaction; other generations are garbage,
// deleted after the switch or on the next open. So are the keys of a store
// without a meta record, or whose record says Dropped.
//
// Every value (format version 3) is framed by recsum (a CRC32C of its
// badger key and itself) and checked whenever it is read, so a damaged
// value, or one shown under another key, is store.ErrCorrupt naming the
// key: badger checks tables only when opening them and its value log only
// when replaying it. A store of format 2 or 1 (no frames) is copied into a
// framed generation when opened (openSpace).
const (
	tagStore = 's'
	tagMeta  = 'm'
	tagGen   = 'g'
	tagObj   = 'o'
	tagVals  = 'v'
	tagIndex = 'i'

	compInline = 0x00
	compHashed = 0x01
)

// maxInline is the longest string kept as is in a key.
const maxInline = 4096

// maxNameLen bounds store and index names, which are always kept inline.
const maxNameLen = 4096

// appendComp appends c(s) and reports whether s was hashed.
func appendComp(b []byte, s string) ([]byte, bool) {
	if len(s) <= maxInline {
		return appendLP(append(b, compInline), s), false
	}
	sum := sha256.Sum256([]byte(s))
	return append(append(b, compHashed), sum[:]...), true
}

// readComp reads one c(x) from b; a hashed one leaves s empty.
func readComp(b []byte) (s string, hashed bool, rest []byte, err error) {
	if len(b) == 0 {
		return "", false, nil, errBadRecord
	}
	switch b[0] {
	case compInline:
		s, rest, err = readLP(b[1:])
		return s, false, rest, err
	case compHashed:
		if len(b) < 1+sha256.Size {
			return "", false, nil, errBadRecord
		}
		return "", true, b[1+sha256.Size:], nil
	}
	return "", false, nil, errBadRecord
}

// FormatVersion is the version of the layout above. Version 2 added
// metaRecord.Entries (a version 1 store opens with Entries true); version 3
// frames every value.
const FormatVersion = 3

const (
	// formatV1 is the format without metaRecord.Entries.
	formatV1 = 1
	// formatUnsealed is the last format without value frames.
	formatUnsealed = 2
)

// errUnsealed is wrapped by raw reads of a store of format 2 or 1.
var errUnsealed = errors.New("a store of a format without checksums: open it once with this build to upgrade it")

func seal(k, v []byte) []byte { return recsum.Seal(k, v) }

func setSealed(w writer, k, v []byte) error { return w.Set(k, seal(k, v)) }

// checkValue returns the value framed in raw, item's, or an error wrapping
// store.ErrCorrupt naming the key.
func checkValue(item *badger.Item, raw []byte) ([]byte, error) {
	v, ok := recsum.Open(item.Key(), raw)
	if !ok {
		return nil, fmt.Errorf("value of key %q: checksum mismatch (%d bytes): %w", shortKey(item.Key()), len(raw), store.ErrCorrupt)
	}
	return v, nil
}

// value calls fn with the value of item once its frame is checked. A failure
// of badger to read it is store.ErrCorrupt too.
func value(item *badger.Item, fn func(v []byte) error) error {
	var fnErr error
	err := item.Value(func(raw []byte) error {
		v, err := checkValue(item, raw)
		if err != nil {
			return err
		}
		fnErr = fn(v)
		return fnErr
	})
	if err != nil && fnErr == nil && !errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("value of key %q: %w: %w", shortKey(item.Key()), store.ErrCorrupt, err)
	}
	return err
}

func valueCopy(item *badger.Item) ([]byte, error) {
	var out []byte
	err := value(item, func(v []byte) error {
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

// shortKey cuts a badger key for errors.
func shortKey(k []byte) []byte {
	if len(k) > 96 {
		return k[:96]
	}
	return k
}

// metaRecord is the value of a store's meta key.
type metaRecord struct {
	driver.Meta
	// Generation is the current generation of the store's objects.
	Generation uint64 `json:"generation"`
	// ResourceVersion is the resume point.
	ResourceVersion string `json:"resourceVersion"`
	// Entries says the index entries are exactly those the value records
	// imply; only then are they read (the bounded mode keeps them).
	Entries bool `json:"entries"`
	// Dropped says a Drop began (raw.go): the store is gone. Generation
	// then has no keys and ResourceVersion is empty, so a build that does
	// not know the field opens an empty store.
	Dropped bool `json:"dropped,omitempty"`
}

// upgrade returns a version 1 record with Entries true, and whether it did.
func (m metaRecord) upgrade() (metaRecord, bool) {
	if m.FormatVersion != formatV1 {
		return m, false
	}
	m.FormatVersion = FormatVersion
	m.Entries = true
	return m, true
}

func appendLP(b []byte, s string) []byte { return varint.AppendString(b, s) }

func storePrefix(name string) []byte {
	return appendLP([]byte{tagStore}, name)
}

// eachStoreName calls fn with the name of every store that has keys in txn,
// in key order, one seek per store. A key that starts with no name is an
// error wrapping errBadRecord.
func eachStoreName(txn *badger.Txn, fn func(name string) error) error {
	return eachGroup(txn, []byte{tagStore}, func(item *badger.Item) ([]byte, error) {
		key := item.Key()
		name, _, err := readLP(key[1:])
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", shortKey(key), err)
		}
		return storePrefix(name), fn(name)
	})
}

// eachGroup calls fn with the first item under prefix, then with the first
// past the prefix fn returns (its group), and so on: one seek per group.
func eachGroup(txn *badger.Txn, prefix []byte, fn func(item *badger.Item) (group []byte, err error)) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek(prefix); it.Valid(); {
		group, err := fn(it.Item())
		if err != nil {
			return err
		}
		end := rawdb.PrefixEnd(group)
		if end == nil {
			return nil
		}
		it.Seek(end)
	}
	return nil
}

// keys builds the keys of one store generation.
type keys struct {
	store []byte // storePrefix(name)
	gen   []byte // store 'g' gen
}

func newKeys(name string, gen uint64) keys {
	k := keys{store: storePrefix(name)}
	k.gen = k.genPrefix(gen)
	return k
}

func (k keys) genPrefix(gen uint64) []byte {
	b := append(append([]byte(nil), k.store...), tagGen)
	return binary.BigEndian.AppendUint64(b, gen)
}

func (k keys) withGen(gen uint64) keys {
	return keys{store: k.store, gen: k.genPrefix(gen)}
}

func (k keys) meta() []byte {
	return append(append([]byte(nil), k.store...), tagMeta)
}

func (k keys) objPrefix() []byte  { return append(append([]byte(nil), k.gen...), tagObj) }
func (k keys) valsPrefix() []byte { return append(append([]byte(nil), k.gen...), tagVals) }

func (k keys) obj(key string) []byte {
	b, _ := appendComp(k.objPrefix(), key)
	return b
}

func (k keys) vals(key string) []byte {
	b, _ := appendComp(k.valsPrefix(), key)
	return b
}

func (k keys) entriesPrefix() []byte { return append(append([]byte(nil), k.gen...), tagIndex) }

func (k keys) indexPrefix(index string) []byte {
	return appendLP(k.entriesPrefix(), index)
}

func (k keys) valuePrefix(index, value string) []byte {
	b, _ := appendComp(k.indexPrefix(index), value)
	return b
}

// entry returns the key and value of an index entry.
func (k keys) entry(index, value, key string) ([]byte, []byte) {
	b, hv := appendComp(k.indexPrefix(index), value)
	b, hk := appendComp(b, key)
	if !hv && !hk {
		return b, nil
	}
	return b, appendLP(appendLP(nil, value), key)
}

// objValue returns what is stored under k.obj(key).
func objValue(key string, data []byte) []byte {
	if len(key) <= maxInline {
		return data
	}
	return append(appendLP(nil, key), data...)
}

// parseObj returns the object key and encoding from an object's key suffix
// (after 'o') and value.
func parseObj(suffix, value []byte) (string, []byte, error) {
	key, hashed, rest, err := readComp(suffix)
	if err != nil || len(rest) != 0 {
		return "", nil, fmt.Errorf("object key %q: %w", suffix, errBadRecord)
	}
	if !hashed {
		if len(value) == 0 {
			// No codec encodes an object in 0 bytes.
			return "", nil, fmt.Errorf("object %q: empty record: %w", key, errBadRecord)
		}
		return key, value, nil
	}
	key, data, err := readLP(value)
	if err != nil {
		return "", nil, fmt.Errorf("object key %q: %w", suffix, err)
	}
	if !namesHashed(suffix, key) {
		return "", nil, fmt.Errorf("object key %q: the key in the value has another digest: %w", suffix, errBadRecord)
	}
	if len(data) == 0 {
		return "", nil, fmt.Errorf("object %q: empty record: %w", key, errBadRecord)
	}
	return key, data, nil
}

// namesHashed reports whether b starts with the hashed component of s.
func namesHashed(b []byte, s string) bool {
	sum := sha256.Sum256([]byte(s))
	return len(b) >= 1+sha256.Size && b[0] == compHashed && bytes.Equal(b[1:1+sha256.Size], sum[:])
}

// parseEntry returns the index value and object key of an index entry from
// its key suffix (after the index prefix) and value.
func parseEntry(suffix, value []byte) (string, string, error) {
	v, hv, keyComp, err := readComp(suffix)
	if err != nil {
		return "", "", err
	}
	key, hk, rest, err := readComp(keyComp)
	if err != nil || len(rest) != 0 {
		return "", "", errBadRecord
	}
	if !hv && !hk {
		return v, key, nil
	}
	// Each part in the value must be the one the key names.
	fullV, value, err := readLP(value)
	if err != nil {
		return "", "", err
	}
	fullKey, value, err := readLP(value)
	if err != nil || len(value) != 0 {
		return "", "", errBadRecord
	}
	if hv && !namesHashed(suffix, fullV) || !hv && fullV != v || hk && !namesHashed(keyComp, fullKey) || !hk && fullKey != key {
		return "", "", fmt.Errorf("index entry: the value names other parts than the key: %w", errBadRecord)
	}
	return fullV, fullKey, nil
}

var errBadRecord = errors.New("malformed record")

func readLP(b []byte) (string, []byte, error) {
	s, rest, ok := varint.String(b)
	if !ok {
		return "", nil, errBadRecord
	}
	return s, rest, nil
}

func encodeValues(vals [][]string) []byte {
	return varint.AppendValues(make([]byte, 0, varint.ValuesSize(vals)), vals)
}

// decodeValues decodes encodeValues, checking there are want indexes.
func decodeValues(b []byte, want int) ([][]string, error) {
	vals, err := varint.Values(b, want)
	if err != nil {
		return nil, fmt.Errorf("index values (%w): %w", err, errBadRecord)
	}
	return vals, nil
}

func encodeMeta(k []byte, m metaRecord) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		// A struct of strings and ints always marshals.
		panic(err)
	}
	return seal(k, b)
}

// readMeta reads the meta record under the key mk, if found. An error with
// found is one of reading or decoding it.
func readMeta(txn *badger.Txn, mk []byte) (m metaRecord, unsealed, found bool, err error) {
	item, err := txn.Get(mk)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return m, false, false, nil
	}
	if err != nil {
		return m, false, false, err
	}
	raw, err := item.ValueCopy(nil)
	if err == nil {
		m, unsealed, err = decodeMeta(mk, raw)
	}
	return m, unsealed, true, err
}

// decodeMeta decodes the meta record raw stored under the key k: framed,
// or not (unsealed) for a store of format 2 or 1.
func decodeMeta(k, raw []byte) (m metaRecord, unsealed bool, err error) {
	if b, ok := recsum.Open(k, raw); ok {
		if err := json.Unmarshal(b, &m); err != nil {
			return m, false, fmt.Errorf("meta record: %w", err)
		}
		return m, false, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.FormatVersion > formatUnsealed {
		return metaRecord{}, false, fmt.Errorf("meta record: checksum mismatch (%d bytes): %w", len(raw), errBadRecord)
	}
	return m, true, nil
}
