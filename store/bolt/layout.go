package bolt

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/rawdb"
	"github.com/informerdb/informerdb/store/internal/recsum"
	"github.com/informerdb/informerdb/store/internal/varint"
)

// On-disk layout (FormatVersion 4):
//
//	stores/                      top-level bucket, created with the first store
//	  <store name>/              one bucket per store (any string)
//	    meta/     "meta" -> JSON driver.Meta, "rv" -> resume point,
//	              "seq" -> the next object sequence number (8-byte big-endian),
//	              "entries" -> present when index/ holds the index entries,
//	              "sealed" -> present when every record is framed (below)
//	    keys/     boltKey(key) -> key record (encodeKeyRecord): seq, the full
//	              key when boltKey is a digest, and the index values
//	    objects/  seq (8-byte big-endian) -> encoded object
//	    index/
//	      <index name>/  indexEntryPrefix(value) ++ seq -> the object key
//	snapshot-import/             top-level bucket where Import stages a store
//	  <store name>/              (raw.go), then moves it under stores/
//
// Nothing else is at the top level (see rootBucket).
//
// Every record is framed by recsum, the CRC32C of its bbolt key and value,
// checked whenever it is read (buckets.open): a damaged record, or one a
// damaged page shows under another key, is store.ErrCorrupt.
//
// index/ is kept only while a bounded-mode store reads it ("entries"):
// writing it would cost the default mode half of a Commit of new objects.
//
// Sequence numbers: bbolt rewrites every page a transaction dirties, so a
// new object takes the next number and is appended to objects/ (and its
// entries to their values' ranges), not filed under its random key.
var (
	bucketStores  = []byte("stores")
	bucketMeta    = []byte("meta")
	bucketKeys    = []byte("keys")
	bucketObjects = []byte("objects")
	bucketIndex   = []byte("index")

	keyMeta    = []byte("meta")
	keyRV      = []byte("rv")
	keySeq     = []byte("seq")
	keyEntries = []byte("entries")
	keySealed  = []byte("sealed")
)

// fillAppend is the FillPercent of objects/, where new objects are
// appended. Index buckets keep bbolt's default: a half-full page takes the
// next Commits' entries without splitting (BENCHMARKS.md, section 6).
const fillAppend = 1.0

// buckets are one store's buckets inside a transaction.
type buckets struct {
	store   *bbolt.Bucket
	meta    *bbolt.Bucket
	keys    *bbolt.Bucket
	objects *bbolt.Bucket
	index   *bbolt.Bucket

	// entries says whether index/ holds the index entries ("entries").
	entries bool
	// sealed says whether the records are framed ("sealed"), as all but
	// those of format version 3 or older are.
	sealed bool
	// name is the store's name, for errors.
	name string
}

// open returns the value of the record v stored under the bbolt key k,
// checking its frame (unless b is unsealed); what names it in errors.
func (b *buckets) open(what string, k, v []byte) ([]byte, error) {
	if !b.sealed {
		return v, nil
	}
	val, ok := recsum.Open(k, v)
	if !ok {
		return nil, fmt.Errorf("store %q: %s %q: checksum mismatch (%d bytes): %w", b.name, what, shorten(string(k)), len(v), store.ErrCorrupt)
	}
	return val, nil
}

// seal returns the framed record of the value v stored under k.
func seal(k, v []byte) []byte { return recsum.Seal(k, v) }

// rootBucket returns the stores bucket of tx, or nil in a new file or one
// holding only bucketImport. Any other top-level entry without it is
// ErrCorrupt (damage, or another program's file): read as empty, it would
// hide every store, and a write would bury them under a new stores bucket.
func rootBucket(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	if root := tx.Bucket(bucketStores); root != nil {
		return root, nil
	}
	c := tx.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		switch {
		case v != nil:
			return nil, fmt.Errorf("top-level key %q is not a bucket, no stores bucket: %w", shorten(string(k)), store.ErrCorrupt)
		case !bytes.Equal(k, bucketImport):
			return nil, fmt.Errorf("unknown top-level bucket %q, no stores bucket: %w", shorten(string(k)), store.ErrCorrupt)
		}
	}
	return nil, nil
}

// createRoot returns the stores bucket of tx, created if missing.
func createRoot(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	root, err := rootBucket(tx)
	if err != nil || root != nil {
		return root, err
	}
	return tx.CreateBucket(bucketStores)
}

// storeBuckets returns name's buckets in tx (see storeIn).
func storeBuckets(tx *bbolt.Tx, name string) (*buckets, error) {
	root, err := rootBucket(tx)
	if err != nil {
		return nil, err
	}
	return storeIn(root, []byte(name))
}

// storeIn returns the buckets of the store name under parent, which the
// process holds: a store missing, or missing one of its buckets, is corrupt.
func storeIn(parent *bbolt.Bucket, name []byte) (*buckets, error) {
	b, err := lookupStore(parent, name)
	if err == nil && b == nil {
		err = fmt.Errorf("store %q vanished from the file: %w", name, store.ErrCorrupt)
	}
	if err != nil {
		return nil, err
	}
	return b, b.complete()
}

// lookupStore returns the buckets of the store name under parent, or nil.
// Only its meta bucket is required: a store of another format version may
// lack the others, and is store.ErrIncompatible.
func lookupStore(parent *bbolt.Bucket, name []byte) (*buckets, error) {
	if parent == nil {
		return nil, nil
	}
	sb := parent.Bucket(name)
	if sb == nil {
		return nil, nil
	}
	b := &buckets{
		store:   sb,
		meta:    sb.Bucket(bucketMeta),
		keys:    sb.Bucket(bucketKeys),
		objects: sb.Bucket(bucketObjects),
		index:   sb.Bucket(bucketIndex),
		name:    string(name),
	}
	if b.meta == nil {
		return nil, fmt.Errorf("store %q lacks its meta bucket: %w", name, store.ErrCorrupt)
	}
	b.entries = b.meta.Get(keyEntries) != nil
	b.sealed = b.meta.Get(keySealed) != nil
	return b, nil
}

// complete checks that b has all its buckets.
func (b *buckets) complete() error {
	if b.keys == nil || b.objects == nil || b.index == nil {
		return fmt.Errorf("store %q lacks one of its buckets: %w", b.name, store.ErrCorrupt)
	}
	return nil
}

// createStore creates the buckets of a store named name under parent, with
// one index bucket per index in m and no index entries, and records m.
func createStore(parent *bbolt.Bucket, name []byte, m driver.Meta) (*buckets, error) {
	sb, err := parent.CreateBucket(name)
	if err != nil {
		return nil, err
	}
	b := &buckets{store: sb, name: string(name), sealed: true}
	if b.meta, err = sb.CreateBucket(bucketMeta); err != nil {
		return nil, err
	}
	if err := b.clear(m.Indexes); err != nil {
		return nil, err
	}
	if err := b.meta.Put(keySealed, seal(keySealed, nil)); err != nil {
		return nil, err
	}
	return b, putMeta(b, m)
}

// clear drops every object, key record and index entry, leaving empty
// index buckets for indexes; sequence numbers start over.
func (b *buckets) clear(indexes []string) error {
	var err error
	if b.keys, err = b.renew(bucketKeys); err != nil {
		return err
	}
	if b.objects, err = b.renew(bucketObjects); err != nil {
		return err
	}
	if err := resetIndexBuckets(b, indexes); err != nil {
		return err
	}
	return b.meta.Delete(keySeq)
}

// renew replaces the store's bucket name, if any, with an empty one.
func (b *buckets) renew(name []byte) (*bbolt.Bucket, error) {
	if err := dropBucket(b.store, name); err != nil {
		return nil, err
	}
	return b.store.CreateBucket(name)
}

// dropBucket deletes the bucket name of parent, if both exist.
func dropBucket(parent *bbolt.Bucket, name []byte) error {
	if parent == nil || parent.Bucket(name) == nil {
		return nil
	}
	return parent.DeleteBucket(name)
}

func putMeta(b *buckets, m driver.Meta) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return b.meta.Put(keyMeta, seal(keyMeta, data))
}

func getMeta(b *buckets) (driver.Meta, error) {
	var m driver.Meta
	data := b.meta.Get(keyMeta)
	if data == nil {
		return m, fmt.Errorf("metadata record missing: %w", store.ErrCorrupt)
	}
	data, err := b.open("metadata record", keyMeta, data)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("metadata record: %w: %w", store.ErrCorrupt, err)
	}
	if !b.sealed && m.FormatVersion >= formatSealed {
		// Its "sealed" record is lost: the records cannot be trusted.
		return m, fmt.Errorf("metadata record of format version %d without its frame: %w", m.FormatVersion, store.ErrCorrupt)
	}
	return m, nil
}

// getRV returns the store's resume point.
func getRV(b *buckets) (string, error) {
	v := b.meta.Get(keyRV)
	if v == nil {
		return "", nil
	}
	rv, err := b.open("resume point", keyRV, v)
	return string(rv), err
}

func putRV(b *buckets, rv string) error {
	if rv == "" {
		return b.meta.Delete(keyRV)
	}
	return b.meta.Put(keyRV, seal(keyRV, []byte(rv)))
}

// sealAll frames every record of b unless it is sealed (a store of format
// version 4), and records that it did. The records are read before any is rewritten:
// bbolt cursors do not survive writes to their bucket.
func sealAll(b *buckets) error {
	if b.sealed {
		return nil
	}
	reseal := func(bk *bbolt.Bucket) error {
		var ks, vs [][]byte
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				continue // a nested bucket
			}
			ks, vs = append(ks, bytes.Clone(k)), append(vs, seal(k, v))
		}
		for i := range ks {
			if err := bk.Put(ks[i], vs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, bk := range []*bbolt.Bucket{b.meta, b.keys, b.objects} {
		if err := reseal(bk); err != nil {
			return err
		}
	}
	c := b.index.Cursor()
	for name, v := c.First(); name != nil; name, v = c.Next() {
		if v != nil {
			return fmt.Errorf("index/ holds the record %q, not an index bucket: %w", shorten(string(name)), store.ErrCorrupt)
		}
		if err := reseal(b.index.Bucket(name)); err != nil {
			return err
		}
	}
	if err := b.meta.Put(keySealed, seal(keySealed, nil)); err != nil {
		return err
	}
	b.sealed = true
	return nil
}

// setEntries makes b keep its index entries in index/, built from the key
// records, or not (index/ emptied), with the "entries" record in the same
// transaction, so a crash leaves the entries current or unused.
func setEntries(b *buckets, names []string, on bool) error {
	if on == b.entries {
		return nil
	}
	if err := resetIndexBuckets(b, names); err != nil {
		return err
	}
	if !on {
		return markEntries(b, false)
	}
	entries := make([][]entry, len(names))
	err := eachKeyRecord(b, len(names), func(key string, seq uint64, vals [][]string) error {
		addEntries(entries, key, seq, vals)
		return nil
	})
	if err != nil {
		return err
	}
	if err := markEntries(b, true); err != nil {
		return err
	}
	return writeEntries(b, names, nil, entries, 1.0)
}

// eachKeyRecord calls fn with the object key, sequence number and index
// values (of nindexes indexes) of every key record of b, in key order.
func eachKeyRecord(b *buckets, nindexes int, fn func(key string, seq uint64, vals [][]string) error) error {
	c := b.keys.Cursor()
	for k, rec := c.First(); k != nil; k, rec = c.Next() {
		key, seq, vals, err := b.keyRecord(k, rec, nindexes)
		if err != nil {
			return err
		}
		if err := fn(key, seq, vals); err != nil {
			return err
		}
	}
	return nil
}

// keyRecord returns the object key, sequence number and index values (of
// nindexes indexes) of the key record rec stored under k.
func (b *buckets) keyRecord(k, rec []byte, nindexes int) (string, uint64, [][]string, error) {
	rec, err := b.open("key record", k, rec)
	if err != nil {
		return "", 0, nil, err
	}
	seq, long, vals, err := decodeKeyRecord(rec, nindexes)
	if err != nil {
		return "", 0, nil, fmt.Errorf("object %q: %w", shorten(string(k)), err)
	}
	key, err := keyOf(k, long)
	return key, seq, vals, err
}

// markEntries records whether index/ holds b's index entries.
func markEntries(b *buckets, on bool) error {
	b.entries = on
	if !on {
		return b.meta.Delete(keyEntries)
	}
	return b.meta.Put(keyEntries, seal(keyEntries, []byte{1}))
}

// resetIndexBuckets replaces index/ with empty buckets for names.
func resetIndexBuckets(b *buckets, names []string) error {
	ib, err := b.renew(bucketIndex)
	if err != nil {
		return err
	}
	b.index = ib
	for _, n := range names {
		if _, err := ib.CreateBucket([]byte(n)); err != nil {
			return fmt.Errorf("create index %q: %w", n, err)
		}
	}
	return nil
}

// seqLen is the length of a sequence number: big-endian, so that bbolt's
// byte order is numeric order.
const seqLen = 8

func seqKey(n uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, seqLen), n) }

// nextSeq returns the store's next sequence number, which must exceed every
// stored object's, lest new objects overwrite old ones.
func nextSeq(b *buckets) (uint64, error) {
	var n uint64
	if v := b.meta.Get(keySeq); v != nil {
		v, err := b.open("sequence number record", keySeq, v)
		if err != nil {
			return 0, err
		}
		if len(v) != seqLen {
			return 0, fmt.Errorf("malformed sequence number record %q: %w", v, store.ErrCorrupt)
		}
		n = binary.BigEndian.Uint64(v)
	}
	if last, _ := b.objects.Cursor().Last(); last != nil {
		if len(last) != seqLen {
			return 0, fmt.Errorf("malformed object key %q: %w", last, store.ErrCorrupt)
		}
		if l := binary.BigEndian.Uint64(last); l >= n {
			return 0, fmt.Errorf("object %d is not below the next sequence number %d: %w", l, n, store.ErrCorrupt)
		}
	}
	return n, nil
}

func putSeq(b *buckets, n uint64) error { return b.meta.Put(keySeq, seal(keySeq, seqKey(n))) }

// maxInline is the length above which keys and index values are stored
// under a digest: bbolt limits keys to 32 KiB, and long ones bloat pages.
const maxInline = 1024

// boltKey returns the bbolt key standing for s: s itself when it is at most
// maxInline bytes, else its first maxInline bytes and its SHA-256, longer
// than any inline form; the full text is kept in the object's key record.
func boltKey(s string) []byte {
	if len(s) <= maxInline {
		return []byte(s)
	}
	sum := sha256.Sum256([]byte(s))
	k := make([]byte, 0, maxInline+len(sum))
	k = append(k, s[:maxInline]...)
	return append(k, sum[:]...)
}

// isDigest reports whether a bbolt key is the digest form of a longer string.
func isDigest(k []byte) bool { return len(k) > maxInline }

// indexEntryPrefix is the part of an index entry key shared by every object
// with value: the length of the value's bbolt form, which keeps a value
// that is a prefix of another apart from it, then that form.
func indexEntryPrefix(value string) []byte {
	v := boltKey(value)
	p := make([]byte, 0, binary.MaxVarintLen64+len(v))
	p = binary.AppendUvarint(p, uint64(len(v)))
	return append(p, v...)
}

// indexEntryKey is the key of the index entry of (value, the object numbered
// seq): a new object's entry goes at the end of its value's range.
func indexEntryKey(value string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(indexEntryPrefix(value), seq)
}

// splitIndexEntry returns the value's bbolt form and the sequence number
// of an index entry key.
func splitIndexEntry(k []byte) (value []byte, seq uint64, err error) {
	n, w := varint.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) != n+seqLen {
		return nil, 0, fmt.Errorf("malformed index entry %q: %w", k, store.ErrCorrupt)
	}
	return k[w : w+int(n)], binary.BigEndian.Uint64(k[w+int(n):]), nil
}

// A key record (encodeKeyRecord) is the object's sequence number and an
// index values record (appendRecord), which starts with recordInline, or
// recordFullKey and the object key whose bbolt key is a digest.
const (
	recordInline  = 0
	recordFullKey = 1
)

// appendRecord appends the index values record of (key, vals) to out; vals
// is aligned with an IndexSet's names.
func appendRecord(out []byte, key string, vals [][]string) []byte {
	if len(key) > maxInline {
		out = varint.AppendString(append(out, recordFullKey), key)
	} else {
		out = append(out, recordInline)
	}
	return varint.AppendValues(out, vals)
}

// decodeRecord decodes appendRecord's output, copying the strings out of
// data (which may be memory-mapped), and checks that it has want indexes;
// fullKey is "" for an inline key.
func decodeRecord(data []byte, want int) (fullKey string, vals [][]string, err error) {
	bad := func(why string) (string, [][]string, error) {
		return "", nil, fmt.Errorf("malformed index values record (%s): %w", why, store.ErrCorrupt)
	}
	if len(data) == 0 {
		return bad("empty")
	}
	switch data[0] {
	case recordInline:
		data = data[1:]
	case recordFullKey:
		var n int
		if fullKey, n, err = decodeRecordKey(data); err != nil {
			return "", nil, err
		}
		data = data[n:]
	default:
		return bad(fmt.Sprintf("flag %d", data[0]))
	}
	vals, err = varint.Values(data, want)
	if err != nil {
		return bad(err.Error())
	}
	return fullKey, vals, nil
}

// encodeKeyRecord encodes the keys/ record of the object numbered seq under
// key, with index values vals (aligned with an IndexSet's names).
func encodeKeyRecord(seq uint64, key string, vals [][]string) []byte {
	n := seqLen + 1 + binary.MaxVarintLen64 + varint.ValuesSize(vals)
	if len(key) > maxInline {
		n += len(key)
	}
	return appendKeyRecord(make([]byte, 0, n), seq, key, vals)
}

// appendKeyRecord appends the keys/ record of (seq, key, vals) to out.
func appendKeyRecord(out []byte, seq uint64, key string, vals [][]string) []byte {
	return appendRecord(binary.BigEndian.AppendUint64(out, seq), key, vals)
}

// recordSeq returns the sequence number of a key record.
func recordSeq(rec []byte) (uint64, error) {
	if len(rec) <= seqLen {
		return 0, fmt.Errorf("malformed key record (%d bytes): %w", len(rec), store.ErrCorrupt)
	}
	return binary.BigEndian.Uint64(rec), nil
}

// decodeKeyRecord decodes encodeKeyRecord's output (see decodeRecord).
func decodeKeyRecord(rec []byte, want int) (seq uint64, fullKey string, vals [][]string, err error) {
	if seq, err = recordSeq(rec); err != nil {
		return 0, "", nil, err
	}
	fullKey, vals, err = decodeRecord(rec[seqLen:], want)
	return seq, fullKey, vals, err
}

// recordKey returns the object key that k, with the key record rec, stands for.
func recordKey(k, rec []byte) (string, error) {
	if !isDigest(k) {
		return string(k), nil
	}
	if len(rec) <= seqLen {
		return "", fmt.Errorf("malformed key record of long key %q...: %w", k[:64], store.ErrCorrupt)
	}
	key, _, err := decodeRecordKey(rec[seqLen:])
	if err != nil {
		return "", err
	}
	return keyOf(k, key)
}

// keyOf returns the object key that the keys/ bucket's key k stands for,
// given the full key its record holds (only a digest's has one, and of the
// same digest: another would be another object's).
func keyOf(k []byte, fullKey string) (string, error) {
	if !isDigest(k) {
		if fullKey != "" {
			return "", fmt.Errorf("key record of key %q holds a full key, which only a long key's record does: %w", shorten(string(k)), store.ErrCorrupt)
		}
		return string(k), nil
	}
	if !bytes.Equal(boltKey(fullKey), k) {
		return "", fmt.Errorf("key record of long key %q...: the key it holds has another digest: %w", k[:64], store.ErrCorrupt)
	}
	return fullKey, nil
}

// eachIdentity calls fn with the bbolt key (valid during the call), the
// object key and the sequence number of every key record of b, in order.
func eachIdentity(b *buckets, fn func(k []byte, key string, seq uint64) error) error {
	c := b.keys.Cursor()
	for k, rec := c.First(); k != nil; k, rec = c.Next() {
		rec, err := b.open("key record", k, rec)
		if err != nil {
			return err
		}
		seq, err := recordSeq(rec)
		if err != nil {
			return fmt.Errorf("key %q: %w", shorten(string(k)), err)
		}
		key, err := recordKey(k, rec)
		if err != nil {
			return err
		}
		if err := fn(k, key, seq); err != nil {
			return err
		}
	}
	return nil
}

// decodeRecordKey decodes the full key of an index values record, and the
// length it read.
func decodeRecordKey(rec []byte) (string, int, error) {
	if len(rec) == 0 || rec[0] != recordFullKey {
		return "", 0, fmt.Errorf("key record of a long key lacks the key: %w", store.ErrCorrupt)
	}
	key, rest, ok := varint.String(rec[1:])
	if !ok {
		return "", 0, fmt.Errorf("key record: bad key length: %w", store.ErrCorrupt)
	}
	if len(key) <= maxInline {
		// Only a key too long for bbolt is kept in its record.
		return "", 0, fmt.Errorf("malformed index values record (full key of %d bytes): %w", len(key), store.ErrCorrupt)
	}
	return key, len(rec) - len(rest), nil
}

// objectOf returns the encoded object numbered seq, whose key is key.
func objectOf(b *buckets, key string, seq uint64) ([]byte, error) {
	sk := seqKey(seq)
	data := b.objects.Get(sk)
	if data == nil {
		return nil, fmt.Errorf("object %d of key %q is missing: %w", seq, shorten(key), store.ErrCorrupt)
	}
	return b.openObject(key, sk, data)
}

// openObject returns the encoded object of key from the objects/ record
// data stored under sk (see buckets.open). An empty object is ErrCorrupt:
// no codec encodes one in 0 bytes, and protobuf decodes them as an object.
func (b *buckets) openObject(key string, sk, data []byte) ([]byte, error) {
	if b.sealed {
		v, ok := recsum.Open(sk, data)
		if !ok {
			return nil, fmt.Errorf("store %q: object %q (number %d): checksum mismatch (%d bytes): %w", b.name, shorten(key), binary.BigEndian.Uint64(sk), len(data), store.ErrCorrupt)
		}
		data = v
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("store %q: object %q: empty record: %w", b.name, shorten(key), store.ErrCorrupt)
	}
	return data, nil
}

// eachEntry calls fn with the value (see longValue; indexes gives the index
// names) and object key of every entry of ib, the bucket of index, or with
// distinct of each value's first.
func eachEntry(b *buckets, ib *bbolt.Bucket, index string, indexes func() ([]string, error), distinct bool, fn func(value, key string) error) error {
	pos, nindexes := -1, -1
	c := ib.Cursor()
	for k, kv := c.First(); k != nil; {
		vf, _, err := splitIndexEntry(k)
		if err != nil {
			return err
		}
		if kv, err = b.open("index entry", k, kv); err != nil {
			return err
		}
		key, value := string(kv), string(vf)
		if isDigest(vf) {
			if nindexes < 0 {
				names, err := indexes()
				if err != nil {
					return err
				}
				pos, nindexes = slices.Index(names, index), len(names)
			}
			if value, err = longValue(b, key, pos, nindexes, vf); err != nil {
				return err
			}
		}
		if err := fn(value, key); err != nil {
			return err
		}
		if !distinct {
			k, kv = c.Next()
			continue
		}
		end := rawdb.PrefixEnd(k[:len(k)-seqLen])
		if end == nil {
			break
		}
		k, kv = c.Seek(end)
	}
	return nil
}

// longValue returns the index value whose digest form is v, from the key
// record of the object key, which has it in index pos.
func longValue(b *buckets, key string, pos, nindexes int, v []byte) (string, error) {
	bk := boltKey(key)
	rec := b.keys.Get(bk)
	if rec == nil || pos < 0 {
		return "", fmt.Errorf("index entry of a long value for %q without a key record: %w", shorten(key), store.ErrCorrupt)
	}
	rec, err := b.open("key record", bk, rec)
	if err != nil {
		return "", err
	}
	_, _, vals, err := decodeKeyRecord(rec, nindexes)
	if err != nil {
		return "", err
	}
	for _, s := range vals[pos] {
		if bytes.Equal(boltKey(s), v) {
			return s, nil
		}
	}
	return "", fmt.Errorf("index entry of a long value that object %q does not have: %w", shorten(key), store.ErrCorrupt)
}

// entry is an index entry to write: its bbolt key and the object key.
type entry struct {
	k   []byte
	key string
}

func compareEntries(a, b entry) int { return bytes.Compare(a.k, b.k) }

// addEntries appends to to[i] the entries of the object (key, seq), vals[i].
func addEntries(to [][]entry, key string, seq uint64, vals [][]string) {
	for i, vs := range vals {
		for _, v := range vs {
			to[i] = append(to[i], entry{indexEntryKey(v, seq), key})
		}
	}
}

// indexBucketOf returns the bucket of index name, which must exist.
func indexBucketOf(b *buckets, name string) (*bbolt.Bucket, error) {
	ib := b.index.Bucket([]byte(name))
	if ib == nil {
		return nil, fmt.Errorf("index bucket %q missing: %w", name, store.ErrCorrupt)
	}
	return ib, nil
}

// keyOp is a prepared operation of a write with its bbolt key.
type keyOp struct {
	k []byte // bbolt key
	p *indexer.Prepared
}

// lastPerKey sorts ops by bbolt key, keeping each key's last operation; a
// sorted batch without repeated keys (the usual) takes one pass.
func lastPerKey(ops []keyOp) []keyOp {
	sorted := true
	for i := 1; i < len(ops) && sorted; i++ {
		sorted = bytes.Compare(ops[i-1].k, ops[i].k) < 0
	}
	if sorted {
		return ops
	}
	// Stable: the operations of one key stay in batch order.
	slices.SortStableFunc(ops, func(a, b keyOp) int { return bytes.Compare(a.k, b.k) })
	out := ops[:0]
	for _, o := range ops {
		if n := len(out); n > 0 && bytes.Equal(out[n-1].k, o.k) {
			out[n-1] = o
			continue
		}
		out = append(out, o)
	}
	return out
}

// writeOps applies ops, in batch order, to b: each key's last operation,
// with index entries diffed against the key record the file holds. Each
// bucket is written in its own key order, which keeps the path's pages hot;
// new objects are numbered in key order.
func writeOps(b *buckets, names []string, ops []keyOp) error {
	ops = lastPerKey(ops)
	next, err := nextSeq(b)
	if err != nil {
		return err
	}
	first := next
	type objOp struct {
		seq uint64
		p   *indexer.Prepared
	}
	objs := make([]objOp, 0, len(ops))
	var scratch []byte // a key record
	// dels and puts are the index entries to remove and add, per index,
	// when b keeps them; disjoint, as each object's are diffed.
	var dels, puts [][]entry
	if b.entries {
		dels, puts = make([][]entry, len(names)), make([][]entry, len(names))
	}
	for _, o := range ops {
		p, k := o.p, o.k
		var (
			seq uint64
			old [][]string
		)
		oldFramed := b.keys.Get(k)
		var oldRec []byte
		if oldFramed != nil {
			// Old index values are needed only to diff entries.
			var err error
			if oldRec, err = b.open("key record", k, oldFramed); err != nil {
				return err
			}
			if b.entries {
				seq, _, old, err = decodeKeyRecord(oldRec, len(names))
			} else {
				seq, err = recordSeq(oldRec)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p.Key, err)
			}
		}
		switch p.Type {
		case store.OpPut:
			if oldFramed == nil {
				seq = next
				next++
			}
			// Only the entries that change: most updates keep them.
			if b.entries {
				oldOnly, newOnly := diffValues(old, p.Values)
				addEntries(dels, p.Key, seq, oldOnly)
				addEntries(puts, p.Key, seq, newOnly)
			}
			objs = append(objs, objOp{seq: seq, p: p})
			// An update that keeps its index values (most do) leaves
			// the record, and so its page, alone. scratch is only for
			// comparing: what is put must stay valid until the commit.
			scratch = appendKeyRecord(scratch[:0], seq, p.Key, p.Values)
			if oldFramed == nil || !bytes.Equal(scratch, oldRec) {
				if err := b.keys.Put(k, seal(k, scratch)); err != nil {
					return fmt.Errorf("put %s: %w", p.Key, err)
				}
			}
		case store.OpDelete:
			if oldFramed == nil {
				continue
			}
			if b.entries {
				addEntries(dels, p.Key, seq, old)
			}
			objs = append(objs, objOp{seq: seq, p: p})
			if err := b.keys.Delete(k); err != nil {
				return err
			}
		}
	}
	slices.SortFunc(objs, func(a, b objOp) int { return cmp.Compare(a.seq, b.seq) })
	b.objects.FillPercent = fillAppend
	for _, o := range objs {
		sk := seqKey(o.seq)
		if o.p.Type == store.OpDelete {
			if err := b.objects.Delete(sk); err != nil {
				return fmt.Errorf("delete %s: %w", o.p.Key, err)
			}
			continue
		}
		if err := b.objects.Put(sk, seal(sk, o.p.Data)); err != nil {
			return fmt.Errorf("put %s: %w", o.p.Key, err)
		}
	}
	if b.entries {
		if err := writeEntries(b, names, dels, puts, 0); err != nil {
			return err
		}
	}
	if next != first {
		return putSeq(b, next)
	}
	return nil
}

// diffValues returns, per index, the values only in old and only in new.
func diffValues(old, new [][]string) (oldOnly, newOnly [][]string) {
	if old == nil {
		return nil, new
	}
	oldOnly = make([][]string, len(old))
	newOnly = make([][]string, len(new))
	for i := range new {
		var o []string
		if i < len(old) {
			o = old[i]
		}
		if slices.Equal(o, new[i]) {
			continue
		}
		for _, v := range o {
			if !slices.Contains(new[i], v) {
				oldOnly[i] = append(oldOnly[i], v)
			}
		}
		for _, v := range new[i] {
			if !slices.Contains(o, v) {
				newOnly[i] = append(newOnly[i], v)
			}
		}
	}
	return oldOnly, newOnly
}

// replaceAll makes the last operation of each key of ops, if a put, the
// complete contents of b: numbered in key order and written into fresh
// buckets filled to 100%, bbolt's fast path for bulk loads.
func replaceAll(b *buckets, names []string, ops []keyOp) error {
	keep := slices.DeleteFunc(lastPerKey(ops), func(o keyOp) bool { return o.p.Type != store.OpPut })
	if err := b.clear(names); err != nil {
		return err
	}
	b.objects.FillPercent, b.keys.FillPercent = 1.0, 1.0
	entries := make([][]entry, len(names))
	for n, o := range keep {
		p, seq := o.p, uint64(n)
		if err := putNew(b, o.k, seq, p.Key, p.Data, p.Values); err != nil {
			return err
		}
		if b.entries {
			addEntries(entries, p.Key, seq, p.Values)
		}
	}
	if err := writeEntries(b, names, nil, entries, 1.0); err != nil {
		return err
	}
	return putSeq(b, uint64(len(keep)))
}

// putNew writes the new object (key, data) numbered seq, and its key record
// with vals under k.
func putNew(b *buckets, k []byte, seq uint64, key string, data []byte, vals [][]string) error {
	sk := seqKey(seq)
	if err := b.objects.Put(sk, seal(sk, data)); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := b.keys.Put(k, seal(k, encodeKeyRecord(seq, key, vals))); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// writeEntries deletes dels[i] (dels may be nil) from the bucket of index
// names[i] and puts puts[i] into it, each in key order; fill, unless 0, is
// the bucket's FillPercent.
func writeEntries(b *buckets, names []string, dels, puts [][]entry, fill float64) error {
	for i, name := range names {
		var del []entry
		if dels != nil {
			del = dels[i]
		}
		if len(del) == 0 && len(puts[i]) == 0 {
			continue
		}
		ib, err := indexBucketOf(b, name)
		if err != nil {
			return err
		}
		if fill != 0 {
			ib.FillPercent = fill
		}
		slices.SortFunc(del, compareEntries)
		for _, e := range del {
			if err := ib.Delete(e.k); err != nil {
				return fmt.Errorf("index %q: %w", name, err)
			}
		}
		slices.SortFunc(puts[i], compareEntries)
		for _, e := range puts[i] {
			if err := ib.Put(e.k, seal(e.k, []byte(e.key))); err != nil {
				return fmt.Errorf("index %q: %w", name, err)
			}
		}
	}
	return nil
}

// writeIndexes replaces every index value of b, and its index entries when
// it keeps them, with those valuesOf gives under set, and records meta. It
// frames b's records first: opening a store of format version 3 or older
// stores changed index functions' values before it upgrades the store, and
// framed records among unframed ones would be framed again.
func writeIndexes(b *buckets, set *indexer.IndexSet, valuesOf func(key string, seq uint64) ([][]string, error), meta driver.Meta) error {
	if err := sealAll(b); err != nil {
		return err
	}
	names := set.Names()
	if err := resetIndexBuckets(b, names); err != nil {
		return err
	}
	entries := make([][]entry, len(names))
	var keys, recs [][]byte
	err := eachIdentity(b, func(k []byte, key string, seq uint64) error {
		v, err := valuesOf(key, seq)
		if err != nil {
			return err
		}
		keys = append(keys, bytes.Clone(k))
		recs = append(recs, seal(k, encodeKeyRecord(seq, key, v)))
		if b.entries {
			addEntries(entries, key, seq, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range keys {
		if err := b.keys.Put(keys[i], recs[i]); err != nil {
			return err
		}
	}
	if err := writeEntries(b, names, nil, entries, 1.0); err != nil {
		return err
	}
	return putMeta(b, meta)
}
