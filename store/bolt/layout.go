package bolt

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// On-disk layout. One file holds any number of stores:
//
//	stores/                      top-level bucket
//	  <store name>/              one bucket per store (any string)
//	    meta/  "meta" -> JSON store.Meta, "rv" -> resume point
//	    objects/  boltKey(key) -> encoded object
//	    values/   key -> the object's index values (encodeRecord)
//	    index/
//	      <index name>/  indexEntryKey(value, key) -> empty
//
// The values bucket lets updates and deletes remove old index entries without
// decoding old objects, and lets a store load its indexes without running
// index functions.
var (
	bucketStores  = []byte("stores")
	bucketMeta    = []byte("meta")
	bucketObjects = []byte("objects")
	bucketValues  = []byte("values")
	bucketIndex   = []byte("index")

	keyMeta = []byte("meta")
	keyRV   = []byte("rv")
)

// buckets are one store's buckets inside a transaction.
type buckets struct {
	store   *bbolt.Bucket
	meta    *bbolt.Bucket
	objects *bbolt.Bucket
	values  *bbolt.Bucket
	index   *bbolt.Bucket
}

// storeBuckets returns name's buckets in tx, or nil if the store does not
// exist. A store bucket missing one of its parts is corrupt.
func storeBuckets(tx *bbolt.Tx, name string) (*buckets, error) {
	root := tx.Bucket(bucketStores)
	if root == nil {
		return nil, nil
	}
	sb := root.Bucket([]byte(name))
	if sb == nil {
		return nil, nil
	}
	b := &buckets{
		store:   sb,
		meta:    sb.Bucket(bucketMeta),
		objects: sb.Bucket(bucketObjects),
		values:  sb.Bucket(bucketValues),
		index:   sb.Bucket(bucketIndex),
	}
	if b.meta == nil || b.objects == nil || b.values == nil || b.index == nil {
		return nil, fmt.Errorf("store %q lacks one of its buckets: %w", name, store.ErrCorrupt)
	}
	return b, nil
}

// createStore creates name's buckets, with one index bucket per index in m,
// and records m. The store must not exist.
func createStore(tx *bbolt.Tx, name string, m store.Meta) (*buckets, error) {
	root, err := tx.CreateBucketIfNotExists(bucketStores)
	if err != nil {
		return nil, err
	}
	sb, err := root.CreateBucket([]byte(name))
	if err != nil {
		return nil, fmt.Errorf("create bucket for store %q: %w", name, err)
	}
	b := &buckets{store: sb}
	for _, p := range []struct {
		dst  **bbolt.Bucket
		name []byte
	}{{&b.meta, bucketMeta}, {&b.objects, bucketObjects}, {&b.values, bucketValues}, {&b.index, bucketIndex}} {
		if *p.dst, err = sb.CreateBucket(p.name); err != nil {
			return nil, err
		}
	}
	for _, idx := range m.Indexes {
		if _, err := b.index.CreateBucket([]byte(idx)); err != nil {
			return nil, fmt.Errorf("create index %q: %w", idx, err)
		}
	}
	return b, putMeta(b, m)
}

// clear drops every object, index entry and value, keeping the index buckets
// of indexes (empty), and the meta bucket.
func (b *buckets) clear(indexes []string) error {
	for _, p := range []struct {
		dst  **bbolt.Bucket
		name []byte
	}{{&b.objects, bucketObjects}, {&b.values, bucketValues}, {&b.index, bucketIndex}} {
		if err := b.store.DeleteBucket(p.name); err != nil {
			return err
		}
		nb, err := b.store.CreateBucket(p.name)
		if err != nil {
			return err
		}
		*p.dst = nb
	}
	for _, idx := range indexes {
		if _, err := b.index.CreateBucket([]byte(idx)); err != nil {
			return fmt.Errorf("create index %q: %w", idx, err)
		}
	}
	return nil
}

func putMeta(b *buckets, m store.Meta) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return b.meta.Put(keyMeta, data)
}

func getMeta(b *buckets) (store.Meta, error) {
	var m store.Meta
	data := b.meta.Get(keyMeta)
	if data == nil {
		return m, fmt.Errorf("metadata record missing: %w", store.ErrCorrupt)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("metadata record: %w: %w", store.ErrCorrupt, err)
	}
	return m, nil
}

func getRV(b *buckets) string { return string(b.meta.Get(keyRV)) }

func putRV(b *buckets, rv string) error {
	if rv == "" {
		return b.meta.Delete(keyRV)
	}
	return b.meta.Put(keyRV, []byte(rv))
}

// maxInline is the length above which keys and index values are stored
// under a digest: bbolt keys are limited to 32 KiB, object keys and index
// values are not, and long keys would bloat branch pages.
const maxInline = 1024

// boltKey returns the bbolt key standing for s: s itself when it is at most
// maxInline bytes, else its first maxInline bytes followed by its SHA-256.
// The digest form is longer than any inline form, so the two never collide;
// its full text is kept in the object's values record (see encodeRecord).
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
// with value: the length of the value's bbolt form, then that form. The
// length prefix keeps a value that is a prefix of another (or contains
// "\x00") from mixing its entries with the other's.
func indexEntryPrefix(value string) []byte {
	v := boltKey(value)
	p := make([]byte, 0, binary.MaxVarintLen64+len(v))
	p = binary.AppendUvarint(p, uint64(len(v)))
	return append(p, v...)
}

// indexEntryKey is the key of the index entry of (value, key): sorted by
// value, then by object key.
func indexEntryKey(value, key string) []byte {
	return append(indexEntryPrefix(value), boltKey(key)...)
}

// splitIndexEntry returns the bbolt forms of the value and the object key of
// an index entry key.
func splitIndexEntry(k []byte) (value, key []byte, err error) {
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) < n {
		return nil, nil, fmt.Errorf("malformed index entry %q: %w", k, store.ErrCorrupt)
	}
	return k[w : w+int(n)], k[w+int(n):], nil
}

// prefixEnd returns the smallest key greater than every key starting with p,
// or nil if there is none.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Values records start with a flag: recordInline, or recordFullKey followed
// by the length and text of the object key whose bbolt key is a digest.
const (
	recordInline  = 0
	recordFullKey = 1
)

// encodeRecord encodes an object's values record: the flag (and full key),
// the number of indexes, then per index the number of values and each value
// with its length. vals is aligned with an IndexSet's names.
func encodeRecord(key string, vals [][]string) []byte {
	n := 1 + 2*binary.MaxVarintLen64
	if len(key) > maxInline {
		n += len(key)
	}
	for _, vs := range vals {
		n += binary.MaxVarintLen64
		for _, v := range vs {
			n += binary.MaxVarintLen64 + len(v)
		}
	}
	out := make([]byte, 0, n)
	if len(key) > maxInline {
		out = append(out, recordFullKey)
		out = binary.AppendUvarint(out, uint64(len(key)))
		out = append(out, key...)
	} else {
		out = append(out, recordInline)
	}
	out = binary.AppendUvarint(out, uint64(len(vals)))
	for _, vs := range vals {
		out = binary.AppendUvarint(out, uint64(len(vs)))
		for _, v := range vs {
			out = binary.AppendUvarint(out, uint64(len(v)))
			out = append(out, v...)
		}
	}
	return out
}

// decodeRecord decodes encodeRecord's output, copying the strings out of
// data (which may be memory-mapped), and checks that it has want indexes.
// fullKey is "" for records of inline keys.
func decodeRecord(data []byte, want int) (fullKey string, vals [][]string, err error) {
	bad := func(why string) (string, [][]string, error) {
		return "", nil, fmt.Errorf("malformed index values record (%s): %w", why, store.ErrCorrupt)
	}
	next := func() (uint64, bool) {
		n, w := binary.Uvarint(data)
		if w <= 0 {
			return 0, false
		}
		data = data[w:]
		return n, true
	}
	if len(data) == 0 {
		return bad("empty")
	}
	flag := data[0]
	data = data[1:]
	switch flag {
	case recordInline:
	case recordFullKey:
		l, ok := next()
		if !ok || l > uint64(len(data)) {
			return bad("key length")
		}
		fullKey = string(data[:l])
		data = data[l:]
	default:
		return bad(fmt.Sprintf("flag %d", flag))
	}
	n, ok := next()
	if !ok {
		return bad("no index count")
	}
	if n != uint64(want) {
		return bad(fmt.Sprintf("%d indexes, want %d", n, want))
	}
	if n > 0 {
		vals = make([][]string, n)
	}
	for i := range vals {
		m, ok := next()
		if !ok || m > uint64(len(data)) {
			return bad("value count")
		}
		if m == 0 {
			continue
		}
		vs := make([]string, m)
		for j := range vs {
			l, ok := next()
			if !ok || l > uint64(len(data)) {
				return bad("value length")
			}
			vs[j] = string(data[:l])
			data = data[l:]
		}
		vals[i] = vs
	}
	if len(data) != 0 {
		return bad("trailing bytes")
	}
	return fullKey, vals, nil
}

// fullKey returns the object key a bbolt key of the objects bucket stands
// for.
func fullKey(b *buckets, k []byte) (string, error) {
	if !isDigest(k) {
		return string(k), nil
	}
	rec := b.values.Get(k)
	if rec == nil {
		return "", fmt.Errorf("no values record for long key %q...: %w", k[:64], store.ErrCorrupt)
	}
	key, _, err := decodeRecordKey(rec)
	return key, err
}

// decodeRecordKey decodes only the full key of a values record.
func decodeRecordKey(rec []byte) (string, int, error) {
	if len(rec) == 0 || rec[0] != recordFullKey {
		return "", 0, fmt.Errorf("values record of a long key lacks the key: %w", store.ErrCorrupt)
	}
	l, w := binary.Uvarint(rec[1:])
	if w <= 0 || l > uint64(len(rec)-1-w) {
		return "", 0, fmt.Errorf("values record: bad key length: %w", store.ErrCorrupt)
	}
	return string(rec[1+w : 1+w+int(l)]), 1 + w + int(l), nil
}

// putEntries adds the index entries of key for vals (aligned with names).
func putEntries(b *buckets, names []string, key string, vals [][]string) error {
	for i, vs := range vals {
		if len(vs) == 0 {
			continue
		}
		ib := b.index.Bucket([]byte(names[i]))
		if ib == nil {
			return fmt.Errorf("index bucket %q missing: %w", names[i], store.ErrCorrupt)
		}
		for _, v := range vs {
			if err := ib.Put(indexEntryKey(v, key), nil); err != nil {
				return fmt.Errorf("index %q value %q: %w", names[i], v, err)
			}
		}
	}
	return nil
}

// writeOps applies prepared operations to b. Only each key's net effect
// is written: its last operation, with index entries diffed against the
// values record the file holds, so an object put and deleted in one batch
// costs nothing, and the entries of intermediate versions never reach the
// file. Callers need not know old index values.
//
// Keys are written in sorted order, each bucket's index entries grouped and
// sorted too: bbolt finds each key from the root, and walking every tree
// in order keeps the path's pages hot and touches each node once in a row
// (measured with BenchmarkCommit, see doc.go).
func writeOps(b *buckets, names []string, ps []indexer.Prepared) error {
	type keyOp struct {
		k []byte // bbolt key
		p *indexer.Prepared
	}
	ops := make([]keyOp, 0, len(ps))
	var pos map[string]int // position in ops by key, when a batch repeats keys
	if len(ps) > 1 {
		pos = make(map[string]int, len(ps))
	}
	for i := range ps {
		p := &ps[i]
		if pos != nil {
			if j, ok := pos[p.Key]; ok {
				ops[j].p = p
				continue
			}
			pos[p.Key] = len(ops)
		}
		ops = append(ops, keyOp{k: boltKey(p.Key), p: p})
	}
	slices.SortFunc(ops, func(a, b keyOp) int { return bytes.Compare(a.k, b.k) })
	// dels and puts are the index entries to remove and add, per index.
	// They are disjoint: an entry names its object, whose old entries are
	// diffed against its new ones.
	dels := make([][][]byte, len(names))
	puts := make([][][]byte, len(names))
	add := func(to [][][]byte, key string, vals [][]string) {
		for i, vs := range vals {
			for _, v := range vs {
				to[i] = append(to[i], indexEntryKey(v, key))
			}
		}
	}
	for _, o := range ops {
		p, k := o.p, o.k
		var old [][]string
		oldRec := b.values.Get(k)
		if oldRec != nil {
			var err error
			if _, old, err = decodeRecord(oldRec, len(names)); err != nil {
				return fmt.Errorf("%s: %w", p.Key, err)
			}
		}
		switch p.Type {
		case store.OpPut:
			// Drop only the entries that change: an update usually keeps
			// its namespace, owner and labels.
			oldOnly, newOnly := diffValues(old, p.Values)
			add(dels, p.Key, oldOnly)
			add(puts, p.Key, newOnly)
			if err := b.objects.Put(k, p.Data); err != nil {
				return fmt.Errorf("put %s: %w", p.Key, err)
			}
			// An update that keeps its index values (most do: status
			// changes) leaves the record alone, so its page stays clean:
			// every page a commit dirties is rewritten whole.
			if rec := encodeRecord(p.Key, p.Values); !bytes.Equal(rec, oldRec) {
				if err := b.values.Put(k, rec); err != nil {
					return fmt.Errorf("put %s: %w", p.Key, err)
				}
			}
		case store.OpDelete:
			add(dels, p.Key, old)
			if err := b.objects.Delete(k); err != nil {
				return err
			}
			if oldRec != nil {
				if err := b.values.Delete(k); err != nil {
					return err
				}
			}
		}
	}
	for i, name := range names {
		if len(dels[i]) == 0 && len(puts[i]) == 0 {
			continue
		}
		ib := b.index.Bucket([]byte(name))
		if ib == nil {
			return fmt.Errorf("index bucket %q missing: %w", name, store.ErrCorrupt)
		}
		slices.SortFunc(dels[i], bytes.Compare)
		for _, e := range dels[i] {
			if err := ib.Delete(e); err != nil {
				return fmt.Errorf("index %q: %w", name, err)
			}
		}
		slices.SortFunc(puts[i], bytes.Compare)
		for _, e := range puts[i] {
			if err := ib.Put(e, nil); err != nil {
				return fmt.Errorf("index %q: %w", name, err)
			}
		}
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

// replaceAll makes the puts of ps (the last one per key wins; a delete
// removes an earlier put) the complete contents of b. Keys are written in
// sorted order into fresh buckets filled to 100%, bbolt's fast path for bulk
// loads.
func replaceAll(b *buckets, names []string, ps []indexer.Prepared) error {
	last := make(map[string]int, len(ps))
	for i := range ps {
		if ps[i].Type == store.OpPut {
			last[ps[i].Key] = i
		} else {
			delete(last, ps[i].Key)
		}
	}
	type item struct {
		k []byte // bbolt key
		i int
	}
	keep := make([]item, 0, len(last))
	for _, i := range last {
		keep = append(keep, item{boltKey(ps[i].Key), i})
	}
	slices.SortFunc(keep, func(a, b item) int { return bytes.Compare(a.k, b.k) })
	if err := b.clear(names); err != nil {
		return err
	}
	b.objects.FillPercent, b.values.FillPercent = 1.0, 1.0
	entries := make([][][]byte, len(names))
	for _, it := range keep {
		p := &ps[it.i]
		k := it.k
		if err := b.objects.Put(k, p.Data); err != nil {
			return fmt.Errorf("put %s: %w", p.Key, err)
		}
		if err := b.values.Put(k, encodeRecord(p.Key, p.Values)); err != nil {
			return fmt.Errorf("put %s: %w", p.Key, err)
		}
		for j, vs := range p.Values {
			for _, v := range vs {
				entries[j] = append(entries[j], indexEntryKey(v, p.Key))
			}
		}
	}
	return putSortedEntries(b, names, entries)
}

// putSortedEntries writes entries[i] into index names[i], sorted, at 100%
// fill.
func putSortedEntries(b *buckets, names []string, entries [][][]byte) error {
	for j, es := range entries {
		ib := b.index.Bucket([]byte(names[j]))
		if ib == nil {
			return fmt.Errorf("index bucket %q missing: %w", names[j], store.ErrCorrupt)
		}
		ib.FillPercent = 1.0
		slices.SortFunc(es, bytes.Compare)
		for _, e := range es {
			if err := ib.Put(e, nil); err != nil {
				return fmt.Errorf("index %q: %w", names[j], err)
			}
		}
	}
	return nil
}

// rebuildIndexes recomputes every index entry and index value of b under set
// from the stored objects, decoding them with codec (or taking them from
// get, when it has them), and records meta.
func rebuildIndexes(b *buckets, set *indexer.IndexSet, codec store.Codec, get func(key string) (interface{}, bool), meta store.Meta) error {
	return writeIndexes(b, set, func(key string) ([][]string, error) {
		var obj interface{}
		ok := false
		if get != nil {
			obj, ok = get(key)
		}
		if !ok {
			var err error
			if obj, err = codec.Decode(b.objects.Get(boltKey(key))); err != nil {
				return nil, fmt.Errorf("decode %s: %w", key, err)
			}
		}
		return set.Values(key, obj)
	}, meta)
}
