package indexer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/internal/writes"
	"github.com/informerdb/informerdb/store"
)

// Change is one prepared operation together with what it replaces, as a
// Persister needs it to maintain index entries without decoding old objects.
type Change struct {
	Prepared
	// Existed reports whether the key held an object before this change
	// (taking earlier changes of the same batch into account).
	Existed bool
	// OldValues are the index values of the object the change replaces or
	// deletes; nil when !Existed.
	OldValues [][]string
}

// Persister is what a backend implements beneath Base: durable writes. Base
// calls it with its write lock held, so calls never overlap.
type Persister interface {
	// Persist writes changes and, when rv is not empty, the resume point,
	// in one transaction. With replace, the changes are the complete new
	// contents: everything else is dropped. On error nothing is written.
	// Persist keeps no reference to changes (the slice) once it returns:
	// Base reuses it for the next batch.
	Persist(ctx context.Context, changes []Change, rv string, replace bool) error
	// PersistIndexes records a new index set and the index values of every
	// stored object under it (keyed by object key), in one transaction.
	PersistIndexes(ctx context.Context, set *IndexSet, values map[string][][]string) error
	// Close releases the backend's resources. Base calls it once.
	Close() error
}

// Base implements store.Store over a Persister, serving every read from a
// Cache of decoded objects. It is safe for concurrent use.
type Base struct {
	writes.Writes

	info      store.Info // static parts; ResourceVersion and Indexes are filled in by Info
	persister Persister
	prep      Preparer // KeyFunc and Codec are fixed; Indexes follows the cache
	cache     *Cache

	// writeMu serializes writers across Prepare, Persist and Apply, so the
	// cache only changes after the backend has committed. A staged commit
	// (store.StagedBatch) holds it for Prepare and Persist only, and is
	// applied later by its writer; every other write first waits for the
	// staged commits persisted before it to be applied (waitApplied).
	writeMu sync.Mutex
	// selfDiffing: no persister, or one that ignores Change.Existed and
	// OldValues.
	selfDiffing bool

	stageMu   sync.Mutex
	stageCond sync.Cond // on stageMu; broadcast when applied grows
	persisted uint64    // staged commits persisted; guarded by stageMu
	applied   uint64    // staged commits applied, in order; guarded by stageMu
	// changeBuf is the slice changes fills, reused from one batch to the
	// next (emptied, so that it holds no object meanwhile), unless a large
	// batch (a relist) grew it past maxChangeBuf. Guarded by writeMu.
	changeBuf []Change

	// unapplied holds, for a persister that is not self-diffing, the state
	// staged commits persisted and did not apply yet, by key: what the
	// next commit's changes replace, before the cache has it. Guarded by
	// stageMu.
	unapplied map[string]stagedState
	// unappliedGrown says unapplied held more than a group commit's keys
	// (maxChangeBuf) since it was made. Guarded by stageMu.
	unappliedGrown bool

	mu sync.RWMutex // guards rv
	rv string
	// seen is LastStoreSyncResourceVersion, moved by applyCache.
	seen *writes.Seen
	// closed is set once, by Close. It is atomic rather than under mu
	// because every read checks it: a second lock per Get made Get twice
	// as slow as client-go's indexer.
	closed atomic.Bool
}

// BaseConfig configures NewBase.
type BaseConfig struct {
	// Info describes the store; its ResourceVersion is the initial resume
	// point.
	Info store.Info
	// Persister makes the store's writes durable; nil keeps nothing but
	// the cache (a memory store).
	Persister Persister
	Options   store.Options
	// Cache holds the objects loaded from the backend; nil means empty.
	Cache *Cache
	// CheckData, when set, refuses the encodings the Persister cannot
	// store (badger: none larger than a value-log file) with an error
	// wrapping store.ErrInvalid and naming key: Prepare then refuses the
	// operation before anything is written, which tells a batch's writer
	// which operation it was.
	CheckData func(key string, data []byte) error

	// The fast paths a Persister allows; each is off unless its backend
	// sets it, which is always correct, only slower.

	// SelfDiffing says Persist learns what a change replaces from its own
	// storage and ignores Change.Existed and Change.OldValues. Base then
	// does not look them up (in what staged commits persisted and did not
	// apply yet, or in its cache), nor record what staged commits persist
	// for the next one. A store without Persister is self-diffing.
	SelfDiffing bool
	// CopiesData says Persist keeps no reference to the Data of the
	// changes it is given once it returns: what it writes, it has copied
	// (into pages, a log, a memtable). Base then encodes the puts it
	// persists into buffers it reuses once they are persisted, instead of
	// allocating one per object: encodings were most of what a durable
	// commit allocated, and so of its garbage collection.
	CopiesData bool
}

// NewBase returns a store over cfg.Persister. When cfg.Cache is nil, the
// store starts empty with cfg.Options.Indexers.
func NewBase(cfg BaseConfig) (*Base, error) {
	c := cfg.Cache
	if c == nil {
		set, err := NewIndexSet(cfg.Options.Indexers)
		if err != nil {
			return nil, err
		}
		c = NewCache(set)
	}
	b := &Base{
		info:      cfg.Info,
		persister: cfg.Persister,
		prep:      Preparer{KeyFunc: cfg.Options.KeyFunc, Codec: cfg.Options.Codec},
		cache:     c,
		rv:        cfg.Info.ResourceVersion,
		seen:      writes.NewSeen(cfg.Info.ResourceVersion),
	}
	// Without a persister nothing reads what a change replaces.
	b.selfDiffing = cfg.Persister == nil || cfg.SelfDiffing
	b.prep.CheckData = cfg.CheckData
	if cfg.Persister != nil && cfg.CopiesData {
		b.prep.bufs = &encodeBuffers{}
	}
	b.stageCond.L = &b.stageMu
	b.Writes = writes.New(cfg.Info.Name, b.write, b.seen)
	return b, nil
}

// Cache returns the store's cache of decoded objects, for backends that write
// snapshots of it.
func (b *Base) Cache() *Cache { return b.cache }

func (b *Base) isClosed() bool {
	return b.closed.Load()
}

func (b *Base) closedErr(op string) error {
	return fmt.Errorf("store: %s %s: %w", op, b.info.Name, store.ErrClosed)
}

// write validates ops, persists them with rv and applies them to the cache.
func (b *Base) write(ctx context.Context, op string, ops []store.Op, rv string, replace bool, rule writes.Rule) error {
	return b.commit(ctx, op, ops, nil, nil, rv, replace, rule)
}

// commit is write for operations that may have been prepared already: ps,
// prepared against the index set set. They are prepared (again) when they
// were not, or against another index set than the current one.
func (b *Base) commit(ctx context.Context, op string, ops []store.Op, ps []Prepared, set *IndexSet, rv string, replace bool, rule writes.Rule) error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if b.isClosed() {
		// Before waiting: a closed store's staged commits may never be
		// applied.
		return b.closedErr(op)
	}
	b.waitApplied()
	ps, err := b.persistLocked(ctx, op, ops, ps, set, rv, replace)
	if err != nil {
		return err
	}
	b.applyCache(ps, rv, replace, rule)
	return nil
}

// persistLocked prepares ops if need be (see commit) and persists them
// with rv, returning them prepared. It changes nothing that reads return.
// The caller holds writeMu. What a change replaces is what the last
// staged commit not yet applied left, or else what the cache holds (see
// changes).
func (b *Base) persistLocked(ctx context.Context, op string, ops []store.Op, ps []Prepared, set *IndexSet, rv string, replace bool) ([]Prepared, error) {
	if b.isClosed() {
		return nil, b.closedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	if cur := b.cache.Indexes(); ps == nil || set != cur {
		p := b.prep
		p.Indexes = cur
		var err error
		if ps, err = p.Prepare(op, ops); err != nil {
			return nil, err
		}
	}
	if b.persister != nil {
		changes := b.changes(ps, replace)
		err := b.persister.Persist(ctx, changes, rv, replace)
		clear(changes)
		if cap(changes) <= maxChangeBuf {
			b.changeBuf = changes[:0]
		}
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		if b.prep.bufs != nil {
			// Persisted, and copied by the persister: nothing reads the
			// encodings any more (the cache keeps decoded objects, and a
			// batch is persisted once).
			b.prep.bufs.release(ps)
		}
	}
	return ps, nil
}

// applyCache makes reads return what persistLocked persisted, then moves
// the resourceVersion seen by rule.
func (b *Base) applyCache(ps []Prepared, rv string, replace bool, rule writes.Rule) {
	if replace {
		b.cache.Replace(ps)
	} else {
		b.cache.Apply(ps)
	}
	if rv != "" {
		b.mu.Lock()
		b.rv = rv
		b.mu.Unlock()
	}
	var last interface{} // the object whose resourceVersion the store sees
	if n := len(ps); n > 0 {
		last = ps[n-1].Object
	}
	b.seen.After(last, rv, rule)
}

// waitApplied waits until every staged commit persisted so far is applied
// to the cache. The caller holds writeMu, so none is persisted meanwhile;
// applying one takes no lock a writer holds.
func (b *Base) waitApplied() {
	b.stageMu.Lock()
	for b.applied != b.persisted {
		b.stageCond.Wait()
	}
	b.stageMu.Unlock()
}

// PrepareBatch implements store.BatchPreparer: keys, index values and
// encodings are computed on the caller's goroutine, without the write lock,
// against the current index set.
func (b *Base) PrepareBatch(batch store.Batch) (store.PreparedBatch, error) {
	if b.isClosed() {
		return nil, b.closedErr("commit")
	}
	p := b.prep
	p.Indexes = b.cache.Indexes()
	ps, err := p.Prepare("commit", batch.Ops)
	if err != nil {
		return nil, err
	}
	return &preparedBatch{base: b, batch: batch, set: p.Indexes, ps: ps}, nil
}

// preparedBatch is a Commit whose operations are prepared.
type preparedBatch struct {
	base  *Base
	batch store.Batch
	set   *IndexSet // the index set ps were prepared against
	ps    []Prepared
}

// Commit implements store.PreparedBatch.
func (pb *preparedBatch) Commit(ctx context.Context) error {
	err := pb.base.commit(ctx, "commit", pb.batch.Ops, pb.ps, pb.set, pb.batch.ResourceVersion, false, writes.CommitRule(pb.batch))
	if err == nil {
		pb.spent()
	}
	return err
}

// spent drops pb's preparation once it is persisted: its encodings may be
// reused (see BaseConfig.CopiesData), so a batch committed again is prepared
// again.
func (pb *preparedBatch) spent() { pb.ps = nil }

// Persist implements store.StagedBatch. It does not wait for the previous
// staged commit to reach the cache, which is what lets a writer persist one
// group while it applies the one before: for a persister that is not
// self-diffing, what the batch replaces is read from what the staged
// commits before it persisted (unapplied), and the batch's own state is
// recorded there until its apply.
func (pb *preparedBatch) Persist(ctx context.Context) (apply func(), err error) {
	b := pb.base
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	rv := pb.batch.ResourceVersion
	ps, err := b.persistLocked(ctx, "commit", pb.batch.Ops, pb.ps, pb.set, rv, false)
	if err != nil {
		return nil, err
	}
	pb.spent()
	b.stageMu.Lock()
	b.persisted++
	ticket := b.persisted
	if !b.selfDiffing {
		if b.unapplied == nil {
			b.unapplied = make(map[string]stagedState, len(ps))
		}
		for i := range ps {
			p := &ps[i]
			b.unapplied[p.Key] = stagedState{ticket: ticket, exists: p.Type == store.OpPut, values: p.Values}
		}
		b.unappliedGrown = b.unappliedGrown || len(b.unapplied) > maxChangeBuf
	}
	b.stageMu.Unlock()
	var once sync.Once
	rule := writes.CommitRule(pb.batch)
	return func() { once.Do(func() { b.applyStaged(ticket, ps, rv, rule) }) }, nil
}

// stagedState is a key's state as a staged commit persisted it.
type stagedState struct {
	ticket uint64 // the staged commit
	exists bool
	values [][]string
}

// applyStaged applies the staged commit numbered ticket to the cache, once
// the one before it is applied.
func (b *Base) applyStaged(ticket uint64, ps []Prepared, rv string, rule writes.Rule) {
	b.stageMu.Lock()
	defer b.stageMu.Unlock()
	for b.applied != ticket-1 {
		b.stageCond.Wait()
	}
	b.applyCache(ps, rv, false, rule)
	// In the same hold of stageMu as the cache update: a lookup of what a
	// change replaces (changes) finds the key here or in the cache.
	for i := range ps {
		if st, ok := b.unapplied[ps[i].Key]; ok && st.ticket == ticket {
			delete(b.unapplied, ps[i].Key)
		}
	}
	if len(b.unapplied) == 0 && b.unappliedGrown {
		// Go maps keep their largest size: a relist's would stay for the
		// process's life. The next staged commit makes one of its size.
		b.unapplied, b.unappliedGrown = nil, false
	}
	b.applied = ticket
	b.stageCond.Broadcast()
}

// maxChangeBuf bounds the slice of changes Base keeps for reuse: a group
// commit's, not a relist's.
const maxChangeBuf = 1 << 14

// sortThreshold is the batch size from which changes reach the persister in
// key order.
const sortThreshold = 64

// changes pairs prepared ops with the state they replace, following earlier
// ops of the same batch (and, for a persister that is not self-diffing,
// the cache). From sortThreshold ops on, the changes are in key
// order, changes to the same key in batch order: B-tree engines insert
// sorted keys by appending; in the order a list arrives in (a relist's map
// order), bbolt shifts every key after each insert point within a page that
// only splits at commit, which made a 100,000-object relist quadratic.
//
// In key order, an earlier change of the same key is the one just before:
// no map of the batch's keys is needed, which matters as commits of
// thousands of distinct keys are what the informer sends.
func (b *Base) changes(ps []Prepared, replace bool) []Change {
	out := b.changeBuf[:0]
	if cap(out) < len(ps) {
		out = make([]Change, len(ps))
	} else {
		out = out[:len(ps)]
	}
	// Sorted before the locks below are taken: an apply waits for them.
	order := keyOrder(ps)
	var old func(key string) ([][]string, bool)
	if !replace && !b.selfDiffing {
		// What a change replaces is what the last staged commit not yet
		// applied left, or what the cache has: both read under stageMu,
		// which an apply holds while it updates the cache and forgets
		// what it applied. One hold of the locks for the whole batch, not
		// one per key: locking per key was most of this function's time.
		// No writer of the cache waits meanwhile: the caller holds
		// writeMu, and an apply waits for stageMu.
		b.stageMu.Lock()
		defer b.stageMu.Unlock()
		b.cache.mu.RLock()
		defer b.cache.mu.RUnlock()
		old = b.cache.indexValuesLocked
		if len(b.unapplied) > 0 {
			old = func(key string) ([][]string, bool) {
				if st, ok := b.unapplied[key]; ok {
					if !st.exists {
						return nil, false
					}
					return st.values, true
				}
				return b.cache.indexValuesLocked(key)
			}
		}
	}
	for i := range out {
		c := &out[i]
		if order != nil {
			c.Prepared = ps[order[i]]
		} else {
			c.Prepared = ps[i]
		}
		if prev := earlierChange(out[:i], c.Key, order != nil); prev != nil {
			if prev.Type == store.OpPut {
				c.Existed, c.OldValues = true, prev.Values
			}
		} else if old != nil {
			c.OldValues, c.Existed = old(c.Key)
		}
	}
	return out
}

// earlierChange returns the last change to key in done, or nil. When
// sorted, only the change just before can be one; otherwise (small
// batches) done is searched backwards.
func earlierChange(done []Change, key string, sorted bool) *Change {
	if sorted {
		if n := len(done); n > 0 && done[n-1].Key == key {
			return &done[n-1]
		}
		return nil
	}
	for i := len(done) - 1; i >= 0; i-- {
		if done[i].Key == key {
			return &done[i]
		}
	}
	return nil
}

// keyOrder returns the positions of ps in key order, ties in batch order,
// or nil when ps is shorter than sortThreshold. It sorts positions, not
// the operations: a Prepared is nearly a hundred bytes, and a sort moves
// elements O(n log n) times.
func keyOrder(ps []Prepared) []int32 {
	if len(ps) < sortThreshold {
		return nil
	}
	order := make([]int32, len(ps))
	sorted := true
	for i := range order {
		order[i] = int32(i)
		if i > 0 && ps[i-1].Key >= ps[i].Key {
			sorted = false
		}
	}
	if sorted {
		return order // strictly increasing keys: no duplicates either
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(ps[a].Key, ps[b].Key); c != 0 {
			return c
		}
		return int(a - b)
	})
	return order
}

// Resync implements cache.Store; it does nothing but report a closed store,
// as every method with an error result does.
func (b *Base) Resync() error {
	if b.isClosed() {
		return b.closedErr("resync")
	}
	return nil
}

// ResourceVersion implements store.Store.
func (b *Base) ResourceVersion() string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.rv
}

// Info implements store.Store.
func (b *Base) Info() store.Info {
	info := b.info
	info.ResourceVersion = b.ResourceVersion()
	info.Indexes = append([]string(nil), b.cache.Indexes().Names()...)
	return info
}

// Get implements cache.Store.
func (b *Base) Get(obj interface{}) (interface{}, bool, error) {
	if typednil.Is(obj) {
		return nil, false, fmt.Errorf("store: get: nil object: %w", store.ErrInvalid)
	}
	key, err := CallKeyFunc(b.prep.KeyFunc, obj)
	if err != nil {
		return nil, false, fmt.Errorf("store: get %T: key function: %w: %w", obj, store.ErrInvalid, err)
	}
	return b.GetByKey(key)
}

// GetByKey implements cache.Store.
func (b *Base) GetByKey(key string) (interface{}, bool, error) {
	if b.isClosed() {
		return nil, false, b.closedErr("get")
	}
	obj, ok := b.cache.Get(key)
	return obj, ok, nil
}

// List implements cache.Store. A closed store lists nothing.
func (b *Base) List() []interface{} {
	if b.isClosed() {
		return nil
	}
	return b.cache.List()
}

// ListKeys implements cache.Store.
func (b *Base) ListKeys() []string {
	if b.isClosed() {
		return nil
	}
	return b.cache.ListKeys()
}

// Index implements cache.Indexer.
func (b *Base) Index(indexName string, obj interface{}) ([]interface{}, error) {
	if b.isClosed() {
		return nil, b.closedErr("index")
	}
	return b.cache.Index(indexName, obj)
}

// IndexKeys implements cache.Indexer.
func (b *Base) IndexKeys(indexName, indexedValue string) ([]string, error) {
	if b.isClosed() {
		return nil, b.closedErr("index keys")
	}
	return b.cache.IndexKeys(indexName, indexedValue)
}

// ListIndexFuncValues implements cache.Indexer.
func (b *Base) ListIndexFuncValues(indexName string) []string {
	if b.isClosed() {
		return nil
	}
	return b.cache.ListIndexFuncValues(indexName)
}

// ByIndex implements cache.Indexer.
func (b *Base) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	if b.isClosed() {
		return nil, b.closedErr("by index")
	}
	return b.cache.ByIndex(indexName, indexedValue)
}

// GetIndexers implements cache.Indexer.
func (b *Base) GetIndexers() cache.Indexers {
	return b.cache.Indexes().Indexers()
}

// AddIndexers implements cache.Indexer: the new indexes are backfilled from
// every stored object and persisted before they become visible. No new
// index (an empty map) writes nothing, as in client-go.
func (b *Base) AddIndexers(newIndexers cache.Indexers) error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if b.isClosed() {
		return b.closedErr("add indexers")
	}
	b.waitApplied() // the index values are computed from the cache
	if len(newIndexers) == 0 {
		// PersistIndexes would rewrite every object's index values.
		return nil
	}
	set, vals, err := b.cache.PrepareIndexes(newIndexers)
	if err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	if b.persister != nil {
		if err := b.persister.PersistIndexes(context.Background(), set, vals); err != nil {
			return fmt.Errorf("store: add indexers: %w", err)
		}
	}
	b.cache.SetIndexes(set, vals)
	return nil
}

// Close implements store.Store.
func (b *Base) Close() error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if b.closed.Swap(true) || b.persister == nil {
		return nil
	}
	return b.persister.Close()
}

var (
	_ store.Store         = (*Base)(nil)
	_ store.BatchPreparer = (*Base)(nil)
	_ store.StagedBatch   = (*preparedBatch)(nil)
)
