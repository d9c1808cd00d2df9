package indexer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/internal/writes"
	"github.com/informerdb/informerdb/store"
)

// Change is one prepared operation with what it replaces, so that a
// Persister maintains index entries without decoding old objects.
type Change struct {
	Prepared
	// Existed reports whether the key held an object before this change,
	// earlier changes of the same batch included; OldValues are then that
	// object's index values.
	Existed   bool
	OldValues [][]string
}

// Persister is what a backend implements beneath Base: durable writes. Base
// calls it with its write lock held, so calls never overlap.
type Persister interface {
	// Commit writes cs, whose index values are aligned with set's names,
	// and, unless rv is empty, the resume point rv, in one atomic commit;
	// with replace, cs are the whole new contents. With diffed, each
	// change's Existed and OldValues say what it replaces; without, a
	// backend that needs them reads them from its storage. Commit keeps no
	// reference to cs (Base reuses the slice), nor, under
	// BaseConfig.CopiesData, to their Data, once it returns. An error may
	// come after the commit landed (a failed sync).
	Commit(ctx context.Context, cs []Change, diffed bool, set *IndexSet, rv string, replace bool) error
	// SetIndexes records set as the store's index set and values (by
	// object key) as the index values of every stored object under it,
	// with their index entries if the store keeps them, in one commit.
	SetIndexes(ctx context.Context, set *IndexSet, values map[string][][]string) error
	// Close releases the backend's resources. Base calls it once.
	Close() error
}

// Base implements store.Store over a Persister, serving every read from its
// Cache of decoded objects. It is safe for concurrent use.
type Base struct {
	writes.Writes
	*Cache // the reads; written only after the persister committed

	info      store.Info // static parts; ResourceVersion and Indexes are filled in by Info
	persister Persister
	prep      Preparer // KeyFunc and Codec are fixed; Indexes follows the cache

	// writeMu serializes writers across Prepare, Persist and Apply, so the
	// cache only changes after the backend has committed. A staged commit
	// (store.StagedBatch) holds it for Prepare and Persist only; every
	// other write first waits for the staged commits persisted before it
	// to be applied (waitApplied).
	writeMu     sync.Mutex
	selfDiffing bool // no persister, or BaseConfig.SelfDiffing

	stageMu   sync.Mutex
	stageCond sync.Cond // on stageMu; broadcast when applied grows
	persisted uint64    // staged commits persisted; guarded by stageMu
	applied   uint64    // staged commits applied, in order; guarded by stageMu
	// changeBuf is the emptied slice of the last batch's changes, reused
	// unless a relist grew it past maxChangeBuf. Guarded by writeMu.
	changeBuf []Change

	// unapplied holds, unless selfDiffing, what staged commits persisted
	// and did not apply yet, by key: what the next commit's changes
	// replace, before the cache has it. Guarded by stageMu, as is
	// unappliedGrown: it held more than maxChangeBuf keys since it was made.
	unapplied      map[string]stagedState
	unappliedGrown bool

	seen *writes.Seen // the resume point and LastStoreSyncResourceVersion
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
	// wrapping store.ErrInvalid and naming key, before anything is written.
	CheckData func(key string, data []byte) error

	// The fast paths a Persister allows, off unless its backend sets them.

	// SelfDiffing says the Persister reads what a change replaces from its
	// own storage: Base then does not look it up, and commits undiffed.
	SelfDiffing bool
	// CopiesData says Commit keeps no reference to the changes' Data once
	// it returns. Base then encodes puts into buffers it reuses, instead
	// of allocating one per object (most of what a commit allocated).
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
		c = NewCache(set, nil)
	}
	c.name = cfg.Info.Name
	b := &Base{
		info:        cfg.Info,
		persister:   cfg.Persister,
		prep:        Preparer{KeyFunc: cfg.Options.KeyFunc, Codec: cfg.Options.Codec, CheckData: cfg.CheckData},
		Cache:       c,
		selfDiffing: cfg.Persister == nil || cfg.SelfDiffing,
		seen:        writes.NewSeen(cfg.Info.ResourceVersion),
	}
	if cfg.Persister != nil && cfg.CopiesData {
		b.prep.bufs = &encodeBuffers{}
	}
	b.stageCond.L = &b.stageMu
	b.Writes = writes.New(cfg.Info.Name, func(ctx context.Context, op string, ops []store.Op, rv string, replace bool, rule writes.Rule) error {
		return b.commit(ctx, op, ops, nil, nil, rv, replace, rule)
	}, b.seen)
	return b, nil
}

// commit validates ops, persists them with rv and applies them to the
// cache. ps, if not nil, are ops prepared against the index set set; they
// are prepared again if set is no longer the current one.
func (b *Base) commit(ctx context.Context, op string, ops []store.Op, ps []Prepared, set *IndexSet, rv string, replace bool, rule writes.Rule) error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if b.closed.Load() {
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
// The caller holds writeMu.
func (b *Base) persistLocked(ctx context.Context, op string, ops []store.Op, ps []Prepared, set *IndexSet, rv string, replace bool) ([]Prepared, error) {
	if b.closed.Load() {
		return nil, b.closedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	cur := b.Indexes()
	if ps == nil || set != cur {
		p := b.prep
		p.Indexes = cur
		var err error
		if ps, err = p.Prepare(op, ops); err != nil {
			return nil, err
		}
	}
	if b.persister != nil {
		changes := b.changes(ps, replace)
		err := b.persister.Commit(ctx, changes, !b.selfDiffing, cur, rv, replace)
		clear(changes)
		if cap(changes) <= maxChangeBuf {
			b.changeBuf = changes[:0]
		}
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		if b.prep.bufs != nil {
			// Copied by the persister: nothing reads the encodings again.
			b.prep.bufs.release(ps)
		}
	}
	return ps, nil
}

// applyCache makes reads return what persistLocked persisted, then moves
// the resourceVersion seen by rule.
func (b *Base) applyCache(ps []Prepared, rv string, replace bool, rule writes.Rule) {
	if replace {
		b.replace(ps)
	} else {
		b.apply(ps)
	}
	var last interface{} // the object whose resourceVersion the store sees
	if n := len(ps); n > 0 {
		last = ps[n-1].Object
	}
	b.seen.After(last, rv, rule)
}

// waitApplied waits until every staged commit persisted so far is applied
// to the cache. The caller holds writeMu, so none is persisted meanwhile.
func (b *Base) waitApplied() {
	b.stageMu.Lock()
	for b.applied != b.persisted {
		b.stageCond.Wait()
	}
	b.stageMu.Unlock()
}

// PrepareBatch implements store.BatchPreparer, without the write lock.
func (b *Base) PrepareBatch(batch store.Batch) (store.PreparedBatch, error) {
	if b.closed.Load() {
		return nil, b.closedErr("commit")
	}
	p := b.prep
	p.Indexes = b.Indexes()
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
// reused (BaseConfig.CopiesData).
func (pb *preparedBatch) spent() { pb.ps = nil }

// Persist implements store.StagedBatch. It does not wait for the previous
// staged commit's apply: unless selfDiffing, what the batch replaces is
// read from what earlier staged commits persisted (unapplied), where the
// batch's own state is recorded until its apply.
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
		// Go maps never shrink: a relist's would stay for ever.
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

// changes pairs prepared ops with the state they replace: an earlier op of
// the same batch's, or (unless selfDiffing) the last unapplied staged
// commit's or the cache's. From sortThreshold ops on, the changes are in
// key order, changes to the same key in batch order: in a relist's map
// order, bbolt shifts every key after each insert point within a page that
// only splits at commit, which made a large relist quadratic. In key order,
// an earlier change of the same key is the one just before: no map of the
// batch's keys is needed.
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
		// Under stageMu, which an apply holds while it updates the cache
		// and forgets what it applied; held once for the whole batch, as
		// locking per key was most of this function's time.
		b.stageMu.Lock()
		defer b.stageMu.Unlock()
		b.mu.RLock() // the Cache's
		defer b.mu.RUnlock()
		old = b.indexValuesLocked
		if len(b.unapplied) > 0 {
			old = func(key string) ([][]string, bool) {
				if st, ok := b.unapplied[key]; ok {
					if !st.exists {
						return nil, false
					}
					return st.values, true
				}
				return b.indexValuesLocked(key)
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
// or nil when ps is shorter than sortThreshold. Positions are cheaper to
// move than a Prepared of nearly a hundred bytes.
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

// Resync implements cache.Store; it does nothing but report a closed store.
func (b *Base) Resync() error {
	if b.closed.Load() {
		return b.closedErr("resync")
	}
	return nil
}

// Info implements store.Store.
func (b *Base) Info() store.Info {
	info := b.info
	info.ResourceVersion = b.ResourceVersion()
	info.Indexes = append([]string(nil), b.Indexes().Names()...)
	return info
}

// Get implements cache.Store.
func (b *Base) Get(obj interface{}) (interface{}, bool, error) {
	return GetByObject(b.prep.KeyFunc, obj, b.GetByKey)
}

// AddIndexers implements cache.Indexer: the new indexes are backfilled from
// every stored object and persisted before they become visible. No new
// index (an empty map) writes nothing, as in client-go.
func (b *Base) AddIndexers(newIndexers cache.Indexers) error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if b.closed.Load() {
		return b.closedErr("add indexers")
	}
	b.waitApplied() // the index values are computed from the cache
	if len(newIndexers) == 0 {
		return nil // SetIndexes would rewrite every object's values
	}
	set, vals, err := b.prepareIndexes(newIndexers)
	if err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	if b.persister != nil {
		if err := b.persister.SetIndexes(context.Background(), set, vals); err != nil {
			return fmt.Errorf("store: add indexers: %w", err)
		}
	}
	b.setIndexes(set, vals)
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
	_ store.Lener         = (*Base)(nil)
	_ store.StagedBatch   = (*preparedBatch)(nil)
)
