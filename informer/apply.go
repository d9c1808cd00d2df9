package informer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/deltafifo"
	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// pendingCommit gathers popped batches until they are committed together.
type pendingCommit struct {
	// ops holds one operation per key, its newest: a key changed many
	// times in a group is written once.
	ops   []store.Op
	opOf  map[string]int // index in ops by key
	notes []queuedNote
	rv    string // resume point reached once everything above is applied
	// resumeOnly: the newest delta that moves the resume point is an
	// event whose object has no metadata (store.Batch.ResumeOnly).
	resumeOnly bool
	deltas     int
	replace    bool // one relist, committed alone
	// relistOpen: the group holds the first keys, not yet the last, of a
	// relist that a DeltaFIFO hands out key by key (see finishRelist).
	relistOpen bool
	seq        uint64 // newest view entry written by ops
	handedOut  uint64 // deltafifo.Batch.HandedOut of the group's last batch
	// prepared is ops and rv prepared for the store ahead of the commit
	// (store.BatchPreparer), or nil.
	prepared store.PreparedBatch
	// corrected lists the keys whose changes the store rejected were left
	// out: their committed state is not the one prepare put in the view.
	corrected []string
}

// heardState is a key's state as handlers last heard of it.
type heardState struct {
	obj    interface{}
	exists bool
}

// addOp records op as key's operation in pc, replacing an earlier one of
// the same key, and returns its index in pc.ops.
func (pc *pendingCommit) addOp(key string, op store.Op) int {
	if i, ok := pc.opOf[key]; ok {
		pc.ops[i] = op
		return i
	}
	if pc.opOf == nil {
		pc.opOf = map[string]int{}
	}
	pc.opOf[key] = len(pc.ops)
	pc.ops = append(pc.ops, op)
	return len(pc.ops) - 1
}

type queuedNote struct {
	n notification
	// op is the index in ops of the write this notification reports, or
	// -1 (a resync writes nothing).
	op int
	// resync notifications go only to the handlers whose resync is due.
	resync bool
}

// prepare turns b into store operations and notifications, appended to pc.
// Each object's previous state is read from the view, which it updates so
// that the queue sees the new state at once. It runs with the queue
// locked.
func (inf *Informer) prepare(logger klog.Logger, b deltafifo.Batch, pc *pendingCommit) {
	pc.deltas += len(b.Deltas)
	inf.stats.popped.Add(int64(len(b.Deltas)))
	if b.Replace || b.RelistDone {
		pc.replace = true
	}
	pc.relistOpen = b.RelistPending
	// OnAdd's isInInitialList, as client-go sets it. FIFO hands out the
	// initial list as one Replace batch; DeltaFIFO key by key.
	initialBatch := b.InInitialList && (b.Replace || inf.opts.Queue == DeltaFIFOQueue)
	// Room for one operation and one notification per delta, made once
	// rather than grown through a relist.
	pc.ops = slices.Grow(pc.ops, len(b.Deltas))
	pc.notes = slices.Grow(pc.notes, len(b.Deltas))
	if pc.opOf == nil {
		pc.opOf = make(map[string]int, len(b.Deltas))
	}
	if b.Replace && inf.store.ResourceVersion() == "" {
		// A first list writes each of its objects; a relist over a
		// synced store only what changed.
		inf.view.reserve(len(b.Deltas))
	}
	for _, d := range b.Deltas {
		switch d.Type {
		case cache.Added, cache.Updated, cache.Replaced, cache.Sync:
			pc.resumeOnly = !hasMetadata(d.Object)
			key, err := inf.keyOf(d.Object)
			if err != nil {
				// The queue computed this key already; this cannot happen
				// unless Options.KeyFunc is not deterministic.
				logger.Error(err, "Dropping a delta whose key cannot be computed", "type", d.Type, "objectType", typeName(d.Object))
				continue
			}
			old, exists, err := inf.view.GetByKey(key)
			if err != nil {
				logger.Error(err, "Reading the previous state failed; notifying an add", "key", key)
				exists = false
			}
			op := -1
			unchanged := exists && (d.Type == cache.Sync ||
				d.Type == cache.Replaced && sameResourceVersion(old, d.Object))
			if !unchanged {
				// A Sync delta, or a relisted object whose resourceVersion
				// did not change, is the stored object: nothing to write.
				op = pc.addOp(key, store.Op{Type: store.OpPut, Object: d.Object, Key: key})
				pc.seq = inf.view.set(key, d.Object, true)
			}
			if exists && d.Type == cache.Replaced && recreated(old, d.Object) {
				// The name was deleted and created again while the watch was
				// not looking (a relist after lost history): the old object
				// is gone, and handlers keyed by UID must hear so (DESIGN
				// invariant 4), not take the new object for an update of it.
				pc.notes = append(pc.notes,
					queuedNote{n: notification{kind: notifyDelete, oldObj: cache.DeletedFinalStateUnknown{Key: key, Obj: old}}, op: op},
					queuedNote{n: notification{kind: notifyAdd, newObj: d.Object, initial: initialBatch}, op: op})
				continue
			}
			if exists {
				pc.notes = append(pc.notes, queuedNote{
					n:      notification{kind: notifyUpdate, oldObj: old, newObj: d.Object},
					resync: d.Type == cache.Sync || sameResourceVersion(old, d.Object),
					op:     op,
				})
			} else {
				pc.notes = append(pc.notes, queuedNote{n: notification{
					kind: notifyAdd, newObj: d.Object, initial: initialBatch,
				}, op: op})
			}
		case cache.Deleted:
			obj := d.Object
			// A tombstone too: client-go's DeleteWithObject keeps its
			// resourceVersion for one.
			pc.resumeOnly = !hasMetadata(obj)
			key, err := inf.keyOf(obj)
			if err != nil {
				logger.Error(err, "Dropping a delete whose key cannot be computed", "objectType", typeName(obj))
				continue
			}
			notify := true
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok && tomb.Obj == nil {
				// Handlers are promised the last known object, never a nil
				// Obj (DESIGN invariant 4); a tombstone of a key the
				// informer does not have reports nothing they heard of.
				old, exists, err := inf.view.GetByKey(key)
				switch {
				case err != nil:
					logger.Error(err, "Not notifying a delete: its tombstone has no object and reading the stored one failed", "key", key)
					notify = false
				case !exists:
					logger.V(4).Info("Not notifying the delete of an object the informer does not have", "key", key)
					notify = false
				default:
					tomb.Obj = old
					obj = tomb
				}
			}
			// The key is deleted either way: the store must not keep what
			// the server deleted.
			op := pc.addOp(key, store.Op{Type: store.OpDelete, Object: obj, Key: key})
			pc.seq = inf.view.set(key, nil, false)
			if notify {
				pc.notes = append(pc.notes, queuedNote{n: notification{kind: notifyDelete, oldObj: obj}, op: op})
			}
		case cache.Bookmark:
			// Moves the resume point only, through b.ResourceVersion.
			pc.resumeOnly = false
		default:
			logger.Error(nil, "Ignoring a delta of an unexpected type", "type", d.Type)
		}
	}
	if b.Replace || b.RelistDone {
		// client-go's Replace takes the list's resourceVersion whatever
		// its objects.
		pc.resumeOnly = false
	}
	if b.ResourceVersion != "" {
		pc.rv = b.ResourceVersion
	}
	pc.handedOut = max(pc.handedOut, b.HandedOut)
}

// recreated reports whether cur is another object than old under the same
// key: both have UIDs, and they differ.
func recreated(old, cur interface{}) bool {
	o, c, ok := uids(old, cur)
	return ok && o != "" && c != "" && o != c
}

// popLoop pops batches, commits them and notifies the handlers until ctx is
// done or the queue is closed and drained. A committer goroutine commits
// one group while this one pops and prepares the next (see the package
// doc, Pipeline), in order; a group completed while a commit still runs is
// also prepared for the store (store.Prepare) before it waits.
func (inf *Informer) popLoop(ctx context.Context, q deltafifo.Queue) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan commitJob)
	committerDone := make(chan struct{})
	inf.applier = newApplier()
	go func() {
		defer close(committerDone)
		// A commit that gives up (ctx ended, store closed) stops the
		// popping too: nothing popped after it may be committed.
		defer cancel()
		// What is persisted is applied and notified, whatever ends the
		// loop: the store's reads must show what it holds.
		defer inf.applier.stop()
		for j := range jobs {
			ok := inf.commit(ctx, logger, j.pc) && (j.carry == nil || inf.commit(ctx, logger, j.carry))
			close(j.done)
			if !ok {
				return
			}
		}
	}()
	// Runs before cancel: the committer finishes the last group first.
	defer func() {
		close(jobs)
		<-committerDone
	}()
	var inflight chan struct{} // closed once the last group handed over is committed
	for {
		pc, carry, err := inf.gather(ctx, logger, q, inflight)
		if pc != nil {
			inf.lastGroup.ops, inf.lastGroup.notes = len(pc.ops), len(pc.notes)
			if inflight != nil && !isClosed(inflight) {
				// The committer is busy: do the group's share of the
				// commit's CPU work now rather than wait idle for it.
				inf.prepareAhead(pc)
				inf.prepareAhead(carry)
			}
			j := commitJob{pc: pc, carry: carry, done: make(chan struct{})}
			select {
			case jobs <- j:
				inflight = j.done
			case <-ctx.Done():
				return
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, deltafifo.ErrClosed), ctx.Err() != nil:
			return
		default:
			logger.Error(err, "Popping from the queue failed")
		}
	}
}

// prepareAhead prepares pc's commit for the store (see store.Prepare). pc
// is complete: nothing joins it any more. A batch the store rejects is left
// unprepared: its commit meets the same error and handles it (see commit).
func (inf *Informer) prepareAhead(pc *pendingCommit) {
	if pc == nil || len(pc.ops) == 0 {
		return
	}
	if p, err := store.Prepare(inf.store, store.Batch{Ops: pc.ops, ResourceVersion: pc.rv, ResumeOnly: pc.resumeOnly}); err == nil {
		pc.prepared = p
	}
}

// commitJob is a group handed to the committer: pc, then carry if any.
type commitJob struct {
	pc, carry *pendingCommit
	done      chan struct{} // closed when both are committed, or given up
}

// gather pops one batch and, unless it is a relist or group commit is off,
// more for up to MaxBatchDelay, and beyond that while the previous group
// is still being committed (inflight not closed), within the operations
// and deltas a commit may hold. A batch that must not join (a relist, or
// one that would not fit) comes back as carry, committed right after pc.
func (inf *Informer) gather(ctx context.Context, logger klog.Logger, q deltafifo.Queue, inflight <-chan struct{}) (pc, carry *pendingCommit, err error) {
	first := inf.newGroup()
	popped := false
	err = q.Pop(ctx, func(_ context.Context, b deltafifo.Batch) error {
		popped = true
		inf.prepare(logger, b, first)
		return nil
	})
	if !popped {
		return nil, nil, err
	}
	if err := inf.finishRelist(ctx, logger, q, first); err != nil {
		return nil, nil, err
	}
	if err != nil || first.replace || inf.opts.MaxBatchDelay <= 0 {
		return first, nil, err
	}
	pc = first
	opLimit := inf.storeLimit()
	maxDeltas := GroupDeltasPerOp * inf.opts.MaxBatchSize
	dctx, cancel := context.WithTimeout(ctx, inf.opts.MaxBatchDelay)
	defer cancel()
	// A full group is handed over as soon as no commit runs; while one
	// does, it still takes batches that only change its keys, which cost
	// its commit nothing.
	running := inflight
	var fullCtx context.Context // done once the running commit is over
	for carry == nil && pc.deltas < maxDeltas {
		popCtx := dctx
		if len(pc.ops) >= opLimit {
			if running == nil || isClosed(running) {
				break
			}
			if fullCtx == nil {
				var cancelFull context.CancelFunc
				fullCtx, cancelFull = untilClosed(ctx, running)
				defer cancelFull()
			}
			popCtx = fullCtx
		}
		perr := q.Pop(popCtx, func(_ context.Context, b deltafifo.Batch) error {
			if b.Replace || b.RelistPending || b.RelistDone || pc.deltas+len(b.Deltas) > maxDeltas || inf.exceedsOps(pc, b, opLimit) {
				carry = &pendingCommit{}
				inf.prepare(logger, b, carry)
				return nil
			}
			inf.prepare(logger, b, pc)
			return nil
		})
		if perr == nil {
			continue
		}
		if popCtx.Err() == nil || ctx.Err() != nil {
			return pc, carry, perr
		}
		if popCtx == fullCtx {
			return pc, carry, nil // full, and the running commit is over
		}
		// The delay is over; while the previous group is still being
		// committed, keep gathering until that commit is over.
		if inflight == nil || isClosed(inflight) {
			return pc, carry, nil
		}
		cancel()
		dctx, cancel = untilClosed(ctx, inflight)
		defer cancel()
		inflight = nil // the next expiry of dctx ends the gathering
	}
	if carry != nil && carry.relistOpen {
		if err := inf.finishRelist(ctx, logger, q, carry); err != nil {
			return pc, nil, err
		}
	}
	return pc, carry, nil
}

// finishRelist pops into pc, if it holds the first batches of a relist
// that a DeltaFIFO hands out key by key (deltafifo.Batch.RelistPending),
// until its last key is out (Batch.RelistDone), so that the relist is
// committed whole with the list resourceVersion, as FIFO's is (DESIGN
// invariant 2). A crash before that commit leaves the store with its old
// resume point, which every event before it has reached: the store needs
// no relist marker. The keys a relist touches are popped before any
// queued after it, so this ends. It returns an error when ctx ends first;
// pc, part of a relist, must then be dropped.
func (inf *Informer) finishRelist(ctx context.Context, logger klog.Logger, q deltafifo.Queue, pc *pendingCommit) error {
	for pc.relistOpen {
		err := q.Pop(ctx, func(_ context.Context, b deltafifo.Batch) error {
			inf.prepare(logger, b, pc)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// newGroup returns an empty group with room for as many operations and
// notifications as the last one held, rather than grow under a steady
// stream.
func (inf *Informer) newGroup() *pendingCommit {
	h := inf.lastGroup
	pc := &pendingCommit{}
	if h.ops > 0 {
		pc.ops, pc.opOf = make([]store.Op, 0, h.ops), make(map[string]int, h.ops)
	}
	if h.notes > 0 {
		pc.notes = make([]queuedNote, 0, h.notes)
	}
	return pc
}

// exceedsOps reports whether adding b to pc could take pc's operations
// past limit: a key pc already has adds none. Keys are computed only when
// b's deltas alone could reach the limit.
func (inf *Informer) exceedsOps(pc *pendingCommit, b deltafifo.Batch, limit int) bool {
	if len(pc.ops)+len(b.Deltas) <= limit {
		return false
	}
	n := 0
	for _, d := range b.Deltas {
		if d.Type == cache.Bookmark {
			continue
		}
		key, err := inf.keyOf(d.Object)
		if err != nil {
			n++ // prepare drops it; count it to be safe
			continue
		}
		if _, ok := pc.opOf[key]; !ok {
			n++
		}
	}
	return len(pc.ops)+n > limit
}

// storeLimit returns how many operations a commit may hold: MaxBatchSize,
// or the store's lower store.BatchLimiter bound.
func (inf *Informer) storeLimit() int {
	n := inf.opts.MaxBatchSize
	if l, ok := inf.store.(store.BatchLimiter); ok {
		if m := l.MaxBatchOps(); m > 0 && m < n {
			n = m
		}
	}
	return n
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// untilClosed returns a context that is done when ctx is done or ch is
// closed.
func untilClosed(ctx context.Context, ch <-chan struct{}) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-cctx.Done():
		}
	}()
	return cctx, cancel
}

// Commit retry backoff bounds.
const (
	commitRetryInitial = 10 * time.Millisecond
	commitRetryMax     = 10 * time.Second
)

// commit writes pc in one store commit, retrying with backoff until it
// succeeds, then notifies the handlers. It returns false when ctx ended
// first: nothing of pc was notified, and the resume point did not move.
//
// A batch the store rejects as invalid would fail forever: what it rejects
// is found without committing (leaveOutRejected) and left out, and the
// rest is committed with the resume point in one commit, so a relist stays
// atomic and no crash leaves part of the batch stored under an older
// resume point. Only when the rejected operations cannot be told apart (a
// store without store.BatchPreparer whose codec refuses an object) is the
// batch applied one operation per commit (oneByOne), giving up this
// batch's atomicity rather than stop the informer.
//
// While it retries, Stats and CheckCommits report the failing commit, until
// it is durable or the retries end with the apply loop.
func (inf *Informer) commit(ctx context.Context, logger klog.Logger, pc *pendingCommit) (committed bool) {
	defer func() {
		if !committed {
			inf.stats.failing.Store(nil)
		}
	}()
	backoff := commitRetryInitial
	var rejected map[int]bool // operations left out: the store rejects them
	var leftOut, oneByOne bool
	for attempt := 1; ; attempt++ {
		err := inf.commitOnce(ctx, logger, pc, rejected, oneByOne)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if errors.Is(err, store.ErrClosed) {
			logger.Error(err, "Store closed under a running informer; stopping the informer's apply loop")
			return false
		}
		if errors.Is(err, store.ErrInvalid) && !oneByOne && len(pc.ops) > 0 {
			if !leftOut {
				leftOut = true
				logger.Error(err, "The store rejected a batch; committing it without what it rejects", "ops", len(pc.ops), "relist", pc.replace)
				var ok bool
				if rejected, ok = inf.leaveOutRejected(logger, pc); ok {
					continue
				}
			}
			logger.Error(err, "What the store rejects in the batch cannot be told apart; applying it one operation at a time and skipping what it rejects", "ops", len(pc.ops), "relist", pc.replace)
			oneByOne = true
			continue
		}
		inf.stats.commitFailures.Add(1)
		since := inf.opts.Clock.Now()
		if f := inf.stats.failing.Load(); f != nil {
			since = f.since
		}
		inf.stats.failing.Store(&commitFailure{since: since, err: err})
		if errors.Is(err, store.ErrWritesStopped) {
			// No retry succeeds before the process restarts: retrying
			// at the longest interval keeps the failure in the logs
			// without spending anything on it.
			backoff = commitRetryMax
			logger.Error(err, "The store refuses writes until the process restarts; nothing new reaches the store or the handlers (see Informer.CheckCommits)", "attempt", attempt, "ops", len(pc.ops), "resourceVersion", pc.rv, "retryIn", backoff)
		} else {
			logger.Error(err, "Committing to the store failed; will retry", "attempt", attempt, "ops", len(pc.ops), "resourceVersion", pc.rv, "retryIn", backoff)
		}
		t := inf.opts.Clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
		backoff = min(2*backoff, commitRetryMax)
	}
}

// leaveOutRejected finds, without committing anything, the operations of
// pc that the store rejects as invalid: one at a time, with the store's
// store.BatchPreparer, which fails as Commit would, else with its index
// functions. If an earlier change of a rejected key in pc is accepted, the
// key's operation becomes the newest such and the later changes'
// notifications are dropped, as if each change had been committed on its
// own and the rejected ones skipped. It returns the operations left out
// (not notified), and false when it found nothing rejected or cannot tell.
func (inf *Informer) leaveOutRejected(logger klog.Logger, pc *pendingCommit) (map[int]bool, bool) {
	bp, canPrepare := inf.store.(store.BatchPreparer)
	var set *indexer.IndexSet
	if !canPrepare {
		var err error
		if set, err = indexer.NewIndexSet(inf.store.GetIndexers()); err != nil {
			return nil, false
		}
	}
	// check returns nil if the store accepts op, an error wrapping
	// store.ErrInvalid if it rejects it, another error if it cannot tell.
	check := func(op store.Op) error {
		switch {
		case canPrepare:
			_, err := bp.PrepareBatch(store.Batch{Ops: []store.Op{op}})
			return err
		case op.Type == store.OpPut:
			_, err := set.Values(op.Key, op.Object)
			return err
		}
		return nil
	}
	var rejected map[int]bool
	var notesOf map[int][]int // the notes of each operation, in order
	drop := map[int]bool{}    // notes of pc to drop
	found := false
	for i := range pc.ops {
		op := pc.ops[i]
		err := check(op)
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrInvalid) {
			return nil, false
		}
		found = true
		if notesOf == nil {
			notesOf = map[int][]int{}
			for j := range pc.notes {
				if o := pc.notes[j].op; o >= 0 {
					notesOf[o] = append(notesOf[o], j)
				}
			}
		}
		// The newest earlier change of the key that the store accepts.
		notes := notesOf[i]
		substitute, keep := store.Op{}, -1
		for n := len(notes) - 1; n >= 0 && keep < 0; n-- {
			qn := pc.notes[notes[n]].n
			switch qn.kind {
			case notifyDelete:
				substitute, keep = store.Op{Type: store.OpDelete, Object: qn.oldObj, Key: op.Key}, n
			case notifyAdd, notifyUpdate:
				put := store.Op{Type: store.OpPut, Object: qn.newObj, Key: op.Key}
				switch cerr := check(put); {
				case cerr == nil:
					substitute, keep = put, n
				case !errors.Is(cerr, store.ErrInvalid):
					return nil, false
				}
			}
		}
		for _, j := range notes[keep+1:] {
			drop[j] = true
		}
		pc.corrected = append(pc.corrected, op.Key)
		if keep >= 0 {
			pc.ops[i] = substitute
			logger.Error(err, "Skipping a change the store rejects; its key keeps the last state of the batch the store accepts", "op", op.Type.String(), "key", op.Key, "objectType", typeName(op.Object), "kept", substitute.Type.String())
			continue
		}
		if rejected == nil {
			rejected = map[int]bool{}
		}
		rejected[i] = true
		logger.Error(err, "Skipping an object the store rejects; its key keeps the state the store had, until a change or a relist brings one the store accepts", "op", op.Type.String(), "key", op.Key, "objectType", typeName(op.Object))
	}
	if !found {
		return nil, false
	}
	pc.dropNotes(drop)
	pc.prepared = nil // prepared for the operations as they were
	return rejected, true
}

// commitOnce commits pc, except the operations in rejected, and, on
// success, notifies the handlers; the store's reads change and the handlers
// are notified under applyMu, so a handler added meanwhile sees either the
// store before the commit and these notifications, or after it and none.
// When the store can stage the commit (store.StagedBatch), pc is persisted
// here and applied and notified by the applier, in order, while the
// committer persists the next group; otherwise the applier is drained
// first.
//
// oneByOne, commit's last resort, commits pc one operation at a time
// instead, skipping (as rejected) those the store rejects as invalid, then
// moves the resume point. Puts and deletes are idempotent: after a failure
// it is retried whole.
func (inf *Informer) commitOnce(ctx context.Context, logger klog.Logger, pc *pendingCommit, rejected map[int]bool, oneByOne bool) error {
	if oneByOne {
		// Every delete is persisted first: one the store then rejects
		// leaves a tombstone of a stored key, which the next start drops.
		// The batch prepared whole is not committed.
		rejected, pc.prepared = nil, nil
	}
	if err := inf.tombs.persist(ctx, logger, pc, rejected); err != nil {
		return err
	}
	if sb, ok := pc.prepared.(store.StagedBatch); ok && len(rejected) == 0 {
		t0 := inf.opts.Clock.Now()
		apply, err := sb.Persist(ctx)
		if err != nil {
			return err
		}
		d := inf.opts.Clock.Since(t0)
		inf.commitSucceeded()
		inf.applier.run(func() {
			inf.applyMu.Lock()
			defer inf.applyMu.Unlock()
			apply()
			inf.metrics.observeCommit(d, len(pc.ops))
			inf.appliedLocked(logger, pc, nil)
		})
		return nil
	}
	inf.applier.drain()
	inf.applyMu.Lock()
	defer inf.applyMu.Unlock()
	ops := pc.ops
	switch {
	case oneByOne:
		rejected, ops = map[int]bool{}, nil
		for i, op := range pc.ops {
			err := inf.timed(1, func() error { return inf.store.Commit(ctx, store.Batch{Ops: []store.Op{op}}) })
			switch {
			case err == nil:
			case errors.Is(err, store.ErrInvalid):
				rejected[i] = true
				pc.corrected = append(pc.corrected, op.Key)
				logger.Error(err, "Skipping an object the store rejects; its key keeps the state the store had, until a change or a relist brings one the store accepts", "op", op.Type.String(), "key", op.Key, "objectType", typeName(op.Object))
			default:
				return err
			}
		}
	case len(rejected) > 0:
		ops = make([]store.Op, 0, len(pc.ops)-len(rejected))
		for i, op := range pc.ops {
			if !rejected[i] {
				ops = append(ops, op)
			}
		}
	}
	if len(ops) > 0 || (pc.rv != "" && pc.rv != inf.store.ResourceVersion()) {
		if err := inf.timed(len(ops), func() error {
			if pc.prepared != nil && len(rejected) == 0 {
				return pc.prepared.Commit(ctx)
			}
			return inf.store.Commit(ctx, store.Batch{Ops: ops, ResourceVersion: pc.rv, ResumeOnly: pc.resumeOnly})
		}); err != nil {
			return err
		}
	}
	inf.commitSucceeded()
	inf.appliedLocked(logger, pc, rejected)
	return nil
}

// timed runs commit, a store commit of ops operations, and observes its
// duration if it succeeds.
func (inf *Informer) timed(ops int, commit func() error) error {
	t0 := inf.opts.Clock.Now()
	err := commit()
	if err == nil {
		inf.metrics.observeCommit(inf.opts.Clock.Since(t0), ops)
	}
	return err
}

// commitSucceeded ends the failing state of a retried commit once it is
// durable, before it is notified.
func (inf *Informer) commitSucceeded() {
	if inf.stats.failing.Load() != nil {
		inf.stats.failing.Store(nil)
	}
}

// appliedLocked notifies the handlers of a committed pc, except of the
// operations in rejected, and updates the sync state.
func (inf *Informer) appliedLocked(logger klog.Logger, pc *pendingCommit, rejected map[int]bool) {
	inf.view.committed(pc.ops, pc.seq)
	inf.stats.commits.Add(1)
	inf.stats.deltas.Add(int64(pc.deltas))
	if len(pc.corrected) > 0 {
		// A key may be listed twice (left out, then one by one).
		inf.stats.rejected.Add(int64(len(sets.New(pc.corrected...))))
	}
	inf.correctHeard(pc)
	inf.tombs.recordLocked(logger, pc, rejected, inf.synced)
	for _, key := range pc.corrected {
		if inf.view.isPending(key) {
			// A later group took the left-out change from the view as
			// the key's previous state.
			obj, exists, err := inf.store.GetByKey(key)
			if err != nil {
				logger.Error(err, "Reading the state a left-out change leaves failed; the next change of the key may be notified with the left-out object as the old one", "key", key)
				continue
			}
			if inf.heard == nil {
				inf.heard = map[string]heardState{}
			}
			inf.heard[key] = heardState{obj: obj, exists: exists}
		}
	}
	inf.proc.distribute(pc.notes, rejected, !inf.synced)
	if f := inf.afterNotify.Load(); f != nil {
		(*f)()
	}
	if pc.rv != "" {
		if pc.rv != inf.appliedRV {
			inf.rvAdvanced.Store(inf.opts.Clock.Now().UnixNano())
		}
		inf.appliedRV = pc.rv
	}
	inf.handedOut = max(inf.handedOut, pc.handedOut)
	if inf.state != nil {
		keys := make([]string, len(pc.ops))
		for i, op := range pc.ops {
			keys[i] = op.Key
		}
		inf.checkStateLocked(logger, keys)
	}
	inf.checkSyncedLocked(logger, pc.replace)
}

// correctHeard mends the first notification in pc of each key of heard,
// which took a change an earlier commit left out as its previous state:
// it now starts from the state handlers heard of, as if that change had
// never been popped (an update becomes an add, an add an update, a
// tombstone carries the object they know or is dropped).
func (inf *Informer) correctHeard(pc *pendingCommit) {
	if len(inf.heard) == 0 {
		return
	}
	var first map[string]int // the first note of each key of heard in pc
	for j := range pc.notes {
		key := inf.noteKey(pc, j)
		if _, ok := inf.heard[key]; !ok {
			continue
		}
		if first == nil {
			first = map[string]int{}
		}
		if _, seen := first[key]; !seen {
			first[key] = j
		}
	}
	var drop map[int]bool
	for key, h := range inf.heard {
		if _, ok := pc.opOf[key]; !ok {
			continue // pc does not change key: a later group does
		}
		delete(inf.heard, key)
		j, ok := first[key]
		if !ok {
			continue
		}
		qn := &pc.notes[j]
		switch qn.n.kind {
		case notifyUpdate, notifyAdd:
			if h.exists {
				qn.n.kind, qn.n.oldObj, qn.n.initial = notifyUpdate, h.obj, false
				qn.resync = sameResourceVersion(h.obj, qn.n.newObj)
			} else {
				qn.n.kind, qn.n.oldObj, qn.resync = notifyAdd, nil, false
			}
		case notifyDelete:
			tomb, ok := qn.n.oldObj.(cache.DeletedFinalStateUnknown)
			switch {
			case !ok:
				// A watch delete carries the server's object.
			case h.exists:
				tomb.Obj = h.obj
				qn.n.oldObj = tomb
			default:
				if drop == nil {
					drop = map[int]bool{}
				}
				drop[j] = true
			}
		}
	}
	pc.dropNotes(drop)
}

// dropNotes removes the notes of pc whose indexes are in drop.
func (pc *pendingCommit) dropNotes(drop map[int]bool) {
	if len(drop) == 0 {
		return
	}
	notes := make([]queuedNote, 0, len(pc.notes)-len(drop))
	for j, qn := range pc.notes {
		if !drop[j] {
			notes = append(notes, qn)
		}
	}
	pc.notes = notes
}

// noteKey returns the key of pc's note j: its operation's, or, for a
// resync (which writes nothing), its object's.
func (inf *Informer) noteKey(pc *pendingCommit, j int) string {
	qn := pc.notes[j]
	if qn.op >= 0 {
		return pc.ops[qn.op].Key
	}
	obj := qn.n.newObj
	if obj == nil {
		obj = qn.n.oldObj
	}
	key, _ := inf.keyOf(obj)
	return key
}

// sameResourceVersion reports whether two objects carry the same non-empty
// resourceVersion: an update between them is a resync. Unlike client-go,
// objects without one (a transform may strip it) never compare equal.
func sameResourceVersion(a, b interface{}) bool {
	rv := resourceVersionOf(a)
	return rv != "" && rv == resourceVersionOf(b)
}

// keyOf computes obj's key as the queue does: a tombstone by its Key.
func (inf *Informer) keyOf(obj interface{}) (string, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Key, nil
	}
	return inf.opts.KeyFunc(obj)
}

// hasMetadata reports whether obj has object metadata.
func hasMetadata(obj interface{}) bool {
	_, err := meta.Accessor(obj)
	return err == nil
}

// resourceVersionOf returns obj's resourceVersion, or "" if it has none.
func resourceVersionOf(obj interface{}) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// applier applies and notifies staged commits (see commitOnce) on a
// goroutine of its own, in the order the committer, its only user, hands
// them over.
type applier struct {
	work    chan func()
	pending sync.WaitGroup // handed over and not yet done
	done    chan struct{}  // closed when the goroutine has returned
}

func newApplier() *applier {
	a := &applier{work: make(chan func()), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for f := range a.work {
			f()
			a.pending.Done()
		}
	}()
	return a
}

// run hands f over, once the previous work is taken: at most one group is
// applied while the committer persists the next.
func (a *applier) run(f func()) {
	a.pending.Add(1)
	a.work <- f
}

// drain waits until everything handed over is done.
func (a *applier) drain() { a.pending.Wait() }

// stop drains the applier and ends its goroutine.
func (a *applier) stop() {
	close(a.work)
	<-a.done
}
