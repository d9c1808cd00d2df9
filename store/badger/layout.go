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
	"github.com/informerdb/informerdb/store/internal/recsum"
	"github.com/informerdb/informerdb/store/internal/varint"
)

// Key layout. Every store in a database owns the keys under its prefix
//
//	's' uvarint(len(name)) name
//
// The length prefix keeps one store's keys from being a prefix of another's
// ("a" and "ab"), whatever bytes the names contain. Under it:
//
//	'm'                                      the meta record (JSON metaRecord)
//	'g' gen(8, big endian) 'o' c(key)        the encoded object
//	'g' gen 'v' c(key)                       the object's index values (encodeValues)
//	'g' gen 'i' lp(index) c(value) c(key)    an index entry (bounded mode only)
//
// where lp(x) is uvarint(len(x)) x, and c(x) is 0x00 lp(x) for strings up to
// maxInline bytes and 0x01 sha256(x) for longer ones: badger limits keys to
// 65,000 bytes, and object keys and index values may be longer. Where c
// hashed, the full string is kept in the value: an object's value is then
// lp(key) followed by the encoding, an index entry's value is lp(value)
// lp(key) (empty when neither is hashed). Index names and values may contain
// any byte, "\x00" included, hence the length prefixes. All entries of one
// index value share a prefix.
//
// The value records are the persisted index: every write of an object
// writes its value record in the same transaction. The index entries are
// derived from them, one per index value, and only the bounded mode, which
// reads them, keeps them; the meta record's Entries says whether they are
// current (exactly what the value records imply), and they are read only
// then. The default mode clears the flag and then deletes the entries; the
// bounded mode deletes whatever entries are left, builds them from the
// value records, and then sets the flag. Entries left behind a clear flag
// (a crash in the middle) are garbage, deleted by the next open.
//
// The meta record names the current generation. Only the current
// generation's keys are live: a write too large for one badger transaction
// builds a new generation in several transactions and switches to it (with
// the resume point) in one final transaction; other generations are garbage,
// deleted after the switch or on the next open.
//
// Every value (format version 3) is framed by recsum: followed by the
// CRC32C of its badger key and itself, checked whenever it is read (value,
// valueCopy), so that a damaged value, a value a damaged table or value log
// shows under another key, or a value badger fails to read and hands out
// empty, is store.ErrCorrupt naming the key, never another object. Badger
// checks its tables' blocks only when opening them with checksum
// verification and the value log only when replaying it; the frames check
// every value every time. A store of format version 2 or 1 (without
// frames) is copied into a framed generation when it is opened (openSpace).
//
// A store without a meta record, or whose meta record says Dropped, does
// not exist: whatever generations it has are garbage (an Import of a new
// store that crashed before its switch, a Drop that crashed before it
// finished), and an Open of the name deletes them and starts past their
// numbers.
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

// readComp reads one c(x) from b. For hashed components it returns
// hashed=true and s empty: the caller finds the string in the value.
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

// FormatVersion is the version of the key layout and records described
// above. Version 2 added metaRecord.Entries; a version 1 store always kept
// its index entries, and opens with Entries true. Version 3 frames every
// value; a version 1 or 2 store is copied into a framed generation when a
// store opens it.
const FormatVersion = 3

const (
	// formatV1 is the format without metaRecord.Entries.
	formatV1 = 1
	// formatUnsealed is the last format without value frames.
	formatUnsealed = 2
)

// errUnsealed is wrapped by the errors of raw reads of a store of format
// version 2 or 1, whose values are not framed: opening it upgrades it.
var errUnsealed = errors.New("a store of a format without checksums: open it once with this build to upgrade it")

// seal returns the framed value of v stored under the badger key k.
func seal(k, v []byte) []byte { return recsum.Seal(k, v) }

// setSealed writes the framed value of v under k.
func setSealed(w writer, k, v []byte) error { return w.Set(k, seal(k, v)) }

// checkValue returns the value of the framed value raw of item, or an
// error wrapping store.ErrCorrupt that names the key.
func checkValue(item *badger.Item, raw []byte) ([]byte, error) {
	v, ok := recsum.Open(item.Key(), raw)
	if !ok {
		return nil, fmt.Errorf("value of key %q: checksum mismatch (%d bytes): %w", shortKey(item.Key()), len(raw), store.ErrCorrupt)
	}
	return v, nil
}

// value calls fn with the value of item, once its frame is checked. A
// failure of badger to read the value is store.ErrCorrupt too: it read
// the value log where the key pointed.
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

// valueCopy returns a copy of the value of item, once its frame is checked.
func valueCopy(item *badger.Item) ([]byte, error) {
	var out []byte
	err := value(item, func(v []byte) error {
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

// shortKey quotes at most 96 bytes of a badger key in errors.
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
	// Entries says the current generation's index entries are current:
	// exactly those its value records imply. Only then are they read.
	// The default mode keeps none (false); the bounded mode maintains
	// them (true).
	Entries bool `json:"entries"`
	// Dropped says that a Drop of the store began (raw.go): the store is
	// gone, whatever keys it still has, and they are garbage. Its
	// Generation is then one without keys and its ResourceVersion empty,
	// so that a build that does not know the field opens an empty store
	// and relists rather than the dropped contents.
	Dropped bool `json:"dropped,omitempty"`
}

// upgrade returns m in the current format: a version 1 record, whose store
// always maintained its index entries, with Entries true. It reports
// whether m changed.
func (m metaRecord) upgrade() (metaRecord, bool) {
	if m.FormatVersion != formatV1 {
		return m, false
	}
	m.FormatVersion = FormatVersion
	m.Entries = true
	return m, true
}

func appendLP(b []byte, s string) []byte { return varint.AppendString(b, s) }

// storePrefix returns the prefix of every key of the named store.
func storePrefix(name string) []byte {
	return appendLP([]byte{tagStore}, name)
}

// eachStoreName calls fn with the name of every store that has keys in
// txn, in key order (not the names' order: keys start with the length of
// the name), one seek per store, and stops at fn's first error. A key that
// does not start with a name is an error wrapping errBadRecord.
func eachStoreName(txn *badger.Txn, fn func(name string) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{tagStore}})
	defer it.Close()
	for it.Seek([]byte{tagStore}); it.Valid(); {
		name, _, err := readLP(it.Item().Key()[1:])
		if err != nil {
			return fmt.Errorf("key %q: %w", shortKey(it.Item().Key()), err)
		}
		if err := fn(name); err != nil {
			return err
		}
		end := prefixEnd(storePrefix(name))
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

// entriesPrefix is the prefix of every index entry of the generation.
func (k keys) entriesPrefix() []byte { return append(append([]byte(nil), k.gen...), tagIndex) }

// indexPrefix is the prefix of every entry of the named index.
func (k keys) indexPrefix(index string) []byte {
	return appendLP(k.entriesPrefix(), index)
}

// valuePrefix is the prefix of the entries of one index value.
func (k keys) valuePrefix(index, value string) []byte {
	b, _ := appendComp(k.indexPrefix(index), value)
	return b
}

// entry returns the key of an index entry and its value: empty unless a
// part was hashed.
func (k keys) entry(index, value, key string) ([]byte, []byte) {
	b, hv := appendComp(k.indexPrefix(index), value)
	b, hk := appendComp(b, key)
	if !hv && !hk {
		return b, nil
	}
	return b, appendLP(appendLP(nil, value), key)
}

// objValue returns what is stored under k.obj(key): the encoding, preceded
// by the key when the key is hashed.
func objValue(key string, data []byte) []byte {
	if len(key) <= maxInline {
		return data
	}
	return append(appendLP(nil, key), data...)
}

// parseObj returns the object key and encoding from an object's key suffix
// (after the 'o' prefix) and value.
func parseObj(suffix, value []byte) (string, []byte, error) {
	key, hashed, rest, err := readComp(suffix)
	if err != nil || len(rest) != 0 {
		return "", nil, fmt.Errorf("object key %q: %w", suffix, errBadRecord)
	}
	if !hashed {
		if len(value) == 0 {
			// No codec encodes an object in 0 bytes, and protobuf
			// decodes them as an empty object.
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
	// The value holds both parts, whole; each must be the one the key
	// names, inline or by its digest.
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

// readLP reads one length-prefixed string from b.
func readLP(b []byte) (string, []byte, error) {
	s, rest, ok := varint.String(b)
	if !ok {
		return "", nil, errBadRecord
	}
	return s, rest, nil
}

// encodeValues encodes index values aligned with the store's index names
// (varint.AppendValues).
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

// encodeMeta returns the framed meta record m, stored under the key k.
func encodeMeta(k []byte, m metaRecord) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		// A struct of strings and ints always marshals.
		panic(err)
	}
	return seal(k, b)
}

// decodeMeta decodes the meta record raw stored under the key k: framed,
// or, for a store of format version 2 or 1, not (unsealed). Any other
// record is an error.
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

// prefixEnd returns the smallest key greater than every key starting with p,
// or nil if there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
