package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/diskusage"
	shared "github.com/informerdb/informerdb/store/internal/engine"
	"github.com/informerdb/informerdb/store/internal/rawdb"
	"github.com/informerdb/informerdb/store/internal/writeback"
)

// Scheme is the URL scheme of this backend.
const Scheme = "bolt"

// FormatVersion is the version of the layout of a store's buckets
// (layout.go). Version 1 keyed objects by their key, version 2 by a
// sequence number, version 3 keeps index entries only in the bounded mode,
// version 4 frames every record; 2 and 3 are upgraded when opened.
const FormatVersion = 4

const (
	// formatSeqEntries is the format version that always kept entries.
	formatSeqEntries = 2
	// formatUnsealed is the last format version without record frames.
	formatUnsealed = 3
	// formatSealed is the first format version with record frames.
	formatSealed = 4
)

// pageSize is the page size of new files (existing files keep theirs):
// large pages cost bytes written, small ones CPU (BENCHMARKS.md, section 6).
const pageSize = 8 << 10

func init() {
	store.Register(Scheme, rawDriver{readView})
}

// filePath returns the canonical absolute form of path. It refuses a path
// that ends in a slash (a directory, which cleaning would turn into a file)
// and, before links are resolved, a link or a path others can write.
func filePath(path string) (string, error) {
	if strings.HasSuffix(path, "/") {
		return "", fmt.Errorf("the path ends in a slash, which names a directory; want a file (bolt:///abs/path/file.db): %w", store.ErrInvalid)
	}
	abs, err := filepath.Abs(path) // cleaned
	if err != nil {
		return "", fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	if err := driver.CheckPath(abs, false); err != nil {
		return "", err
	}
	return canonical(abs), nil
}

// Open opens the store named opts.Name in the bbolt file at path, creating
// the file (0600) and its directory (0700) when missing. Unset options take
// their defaults, but opts.Codec is required. opts.CacheSize > 0 selects the
// bounded mode. A relative path is made absolute.
func Open(ctx context.Context, path string, opts *store.Options) (store.Store, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return open(ctx, path, o)
}

func open(ctx context.Context, path string, o store.Options) (store.Store, error) {
	fail := func(err error) (store.Store, error) {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, path, err)
	}
	p, err := filePath(path)
	if err != nil {
		return fail(err)
	}
	path = p
	if o.Codec == nil {
		return fail(fmt.Errorf("bolt stores need Options.Codec (see indexer.NewCodec): %w", store.ErrInvalid))
	}
	if len(o.Name) > maxNameLen {
		return nil, fmt.Errorf("store: open %s in %s: store name too long (%d bytes, at most %d): %w", shorten(o.Name), path, len(o.Name), maxNameLen, store.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	set, err := indexer.NewIndexSet(o.Indexers)
	if err != nil {
		return fail(err)
	}
	f, err := acquire(ctx, path, o)
	if err != nil {
		return nil, err
	}
	s, err := openStore(ctx, f, o, set)
	if err != nil {
		if rerr := f.release(o.Name); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return s, nil
}

// openStore opens the store o.Name of f as the shared decoded store or,
// with o.CacheSize, the shared bounded one.
func openStore(ctx context.Context, f *file, o store.Options, set *indexer.IndexSet) (store.Store, error) {
	eng := &engine{file: f, name: o.Name, meta: driver.MetaFor(o, FormatVersion)}
	cfg := shared.OpenConfig{
		Options: o,
		Indexes: set,
		Where:   f.path,
		// writeOps reads each key's old record from the file.
		SelfDiffing: true,
		OpenError: func(err error) error {
			if errors.Is(err, store.ErrInvalid) {
				// An index function that fails on a stored object.
				return fmt.Errorf("store: open %s in %s: %w", o.Name, f.path, err)
			}
			return fileError(f.path, o, fmt.Errorf("load store %q: %w", o.Name, err))
		},
	}
	var (
		c        *indexer.Cache
		keyReset string
	)
	rv, reset, err := prepareStore(f, o, set, func() (err error) {
		if o.CacheSize > 0 {
			// prepareStore rebuilt the values if the index set changed.
			keyReset, _, err = shared.Settle(ctx, eng, cfg)
		} else {
			c, keyReset, err = shared.Load(ctx, eng, cfg)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if keyReset != "" {
		// As a scope change (prepareStore): the store was emptied.
		rv, reset = "", keyReset
	}
	cfg.Info = eng.meta.Info(Scheme, o.Name, rv)
	cfg.Info.Reset = reset
	if o.CacheSize > 0 {
		return &bounded{shared.New(eng, shared.Config{
			Info:            cfg.Info,
			Options:         o,
			Indexes:         set,
			ResourceVersion: rv,
		}), onFile{f}}, nil
	}
	base, err := shared.NewDecoded(eng, c, cfg)
	if err != nil {
		return nil, err
	}
	return &defaultStore{base, onFile{f}}, nil
}

// defaultStore is a default-mode store. It is safe for concurrent use.
type defaultStore struct {
	*indexer.Base
	onFile
}

// bounded is a bounded-mode store. It is safe for concurrent use.
type bounded struct {
	*shared.Store
	onFile
}

// onFile is what both modes add to the shared store: the file.
type onFile struct{ file *file }

// canonical resolves symbolic links in path, so that two names of one file
// share one bbolt database instead of the second waiting for its lock.
func canonical(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		return filepath.Join(dir, filepath.Base(path))
	}
	return path
}

// file is one bbolt database shared by every store open on it in this
// process (files): bbolt's flock would make a second bolt.Open of it wait.
type file struct {
	path       string
	db         *bbolt.DB
	durability store.Durability
	// readOnly says raw reads opened db: writers wait for it to close.
	readOnly bool
	closed   chan struct{} // closed once db is

	// syncFault holds the first commit that failed to reach the disk.
	syncFault atomic.Pointer[error]
	// writeback is the file bbolt writes, for package writeback during
	// durable commits; nil when read-only, nosync or unsupported.
	writeback syscall.RawConn
}

// update runs fn in a write transaction of the file; every write goes
// through it. A commit that fails to sync or meets an I/O error fails every
// later update, until the file is reopened: its pages may be on disk though
// bbolt rolled back, and the kernel may report the next fsync as a success.
// Other failures (fn's, a full disk) leave the file as it was.
func (f *file) update(fn func(tx *bbolt.Tx) error) error {
	if err := f.syncFailed(); err != nil {
		return err
	}
	var fnErr error
	stopWriteback := func() {}
	defer func() { stopWriteback() }()
	err := f.db.Update(func(tx *bbolt.Tx) error {
		fnErr = fn(tx)
		if fnErr == nil && f.writeback != nil {
			// bbolt pwrites the pages once fn returns, then fdatasyncs:
			// writeback started meanwhile overlaps the two.
			rc := f.writeback
			stopWriteback = writeback.Every(func() { writeback.Start(rc) })
		}
		return fnErr
	})
	if testHookCommitErr != nil && err == nil {
		err = testHookCommitErr()
	}
	if err != nil && fnErr == nil && isSyncFailure(err) {
		f.syncFault.CompareAndSwap(nil, &err)
		return f.syncFailed()
	}
	if err != nil && fnErr == nil {
		err = withErrno(err)
	}
	return err
}

// withErrno returns err, an error of a bbolt commit, also wrapping the
// errno its message ends with when bbolt formatted it in with %s (v1.5.0's
// "file resize error"), so that errors.Is finds ENOSPC or EFBIG.
func withErrno(err error) error {
	for _, errno := range []syscall.Errno{syscall.EFBIG, syscall.ENOSPC, syscall.EDQUOT} {
		if !errors.Is(err, errno) && strings.HasSuffix(err.Error(), errno.Error()) {
			return errnoError{err, errno}
		}
	}
	return err
}

// errnoError is an error that also wraps the errno its message ends with.
type errnoError struct {
	err   error
	errno syscall.Errno
}

func (e errnoError) Error() string   { return e.err.Error() }
func (e errnoError) Unwrap() []error { return []error{e.err, e.errno} }

// testHookCommitErr, when set by a test, replaces the result of every
// successful commit of update: a failure of bbolt's final fdatasync.
var testHookCommitErr func() error

// isSyncFailure reports whether err, of bbolt's Commit, says its bytes may
// not be on disk: a bare errno (fdatasync's; writes' are *os.PathError), EIO.
func isSyncFailure(err error) bool {
	var errno syscall.Errno
	bare := errors.As(err, &errno) && errors.Unwrap(err) == nil
	return bare || errors.Is(err, syscall.EIO)
}

// syncFailed returns the error of writes after a failed sync, or nil.
func (f *file) syncFailed() error {
	p := f.syncFault.Load()
	if p == nil {
		return nil
	}
	return fmt.Errorf("%w: a commit failed to reach the disk (%w); writes fail until every store of the file is closed and opened again (restart the process): what that commit wrote may be on disk or not, and no later write would be known durable", store.ErrWritesStopped, *p)
}

// files holds the open files by canonical path.
var files rawdb.Registry[*file]

// acquire returns the file at path, opened if needed, with o.Name reserved.
func acquire(ctx context.Context, path string, o store.Options) (*file, error) {
	return openFile(ctx, path, o.Name, o, true, func(f *file, inUse bool) error {
		if inUse {
			return fmt.Errorf("store: open %s in %s: %w (close it first)", o.Name, path, store.ErrInUse)
		}
		if f.durability != o.Durability {
			return fmt.Errorf("store: open %s in %s: durability %q, but the file is open with %q; durability is per file: %w",
				o.Name, path, o.Durability, f.durability, store.ErrInvalid)
		}
		return nil
	})
}

// release gives back a reference, of the store name or ("") of a raw
// access, and closes the file with the last.
func (f *file) release(name string) error {
	return files.Release(f.path, name, func(f *file) error {
		err := f.db.Close()
		close(f.closed)
		if err != nil {
			return fmt.Errorf("store: close %s: %w", f.path, err)
		}
		return nil
	})
}

// testHookWaitReadOnly, when set by a test, is called (files locked) when
// a writer starts waiting for a read-only open to close.
var testHookWaitReadOnly func(path string)

// openFile returns the file at path with user reserved ("": a raw
// access's reference), opening it if needed: read-write if write, else
// read-only, so that reads never modify a file (and work on mode 0400). A
// read shares any open; a write waits for a read-only one to close, at most
// o.LockTimeout (then store.ErrInUse) and until ctx ends. check, if set,
// decides whether user may share a file already open.
func openFile(ctx context.Context, path, user string, o store.Options, write bool, check func(f *file, inUse bool) error) (*file, error) {
	// One o.LockTimeout for all the waiting.
	var timeout *time.Timer
	defer func() {
		if timeout != nil {
			timeout.Stop()
		}
	}()
	wait := func(until <-chan struct{}, opening bool) error {
		if timeout == nil {
			timeout = time.NewTimer(o.LockTimeout)
		}
		what, err := "reads of this process to close the file", fmt.Errorf(
			"store: open %s: reads of this process (stores, export, index entries) kept the file open read-only for %v: %w (%s)",
			path, o.LockTimeout, store.ErrInUse, driver.LockTimeoutHint)
		if opening {
			// Another goroutine's open; it may fail, so look again.
			what, err = "another open of the file in this process", fmt.Errorf(
				"store: open %s: another open of the file in this process waited for its lock for %v: %w (%s)",
				path, o.LockTimeout, store.ErrLocked, driver.LockTimeoutHint)
		}
		select {
		case <-until:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("store: open %s: waiting for %s: %w", path, what, ctx.Err())
		case <-timeout.C:
			return err
		}
	}
	use := func(f *file, inUse bool) (<-chan struct{}, error) {
		if !write || !f.readOnly {
			if check == nil {
				return nil, nil
			}
			return nil, check(f, inUse)
		}
		if testHookWaitReadOnly != nil {
			testHookWaitReadOnly(path)
		}
		return f.closed, nil
	}
	return files.Acquire(path, user, func() (*file, error) {
		db, osFile, err := openDB(ctx, path, o, !write)
		if err != nil {
			return nil, err
		}
		f := &file{path: path, db: db, durability: o.Durability, readOnly: !write, closed: make(chan struct{})}
		if write && o.Durability != store.DurabilityNoSync {
			f.writeback = writeback.Conn(osFile)
		}
		return f, nil
	}, use, wait)
}

// lockRetry is how often openDB tries a lock (itself, to stop with ctx).
const lockRetry = 50 * time.Millisecond

// testHookLockBusy, when set by a test, is called when openDB finds a lock.
var testHookLockBusy func(path string)

// openDB opens path with bbolt, read-only if readOnly, turning bbolt's
// errors and panics into store.ErrLocked and store.ErrCorrupt; it waits for
// another process's lock at most o.LockTimeout, and until ctx ends. A
// read-only open creates nothing: a missing file is store.ErrNotFound.
func openDB(ctx context.Context, path string, o store.Options, readOnly bool) (db *bbolt.DB, osFile *os.File, err error) {
	if readOnly {
		fi, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("store: open %s: %w: %w", path, store.ErrNotFound, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("store: open %s: %w", path, err)
		}
		// bbolt would initialise it: a crash while bbolt created a file
		// leaves one, holding no store.
		if fi.Size() == 0 {
			return nil, nil, fileError(path, o, fmt.Errorf("empty file (0 bytes), not a bolt database: %w", store.ErrCorrupt))
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("store: open %s: create directory: %w", path, err)
	}
	bo := &bbolt.Options{
		ReadOnly:        readOnly,
		FreelistType:    bbolt.FreelistMapType,
		NoSync:          o.Durability == store.DurabilityNoSync,
		PageSize:        pageSize,
		MmapFlags:       mmapFlags(o.CacheSize == 0),
		InitialMmapSize: initialMmapSize,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			osFile = f
			return f, err
		},
	}
	// A Timeout of 0 would wait for ever; one shorter than bbolt's retry
	// interval (50ms) tries the lock once.
	bo.Timeout = time.Nanosecond
	replacements := 0
	err = rawdb.WaitLock(ctx, o.LockTimeout, lockRetry, lockRetry, "another process to release the file",
		func(err error) bool { return errors.Is(err, berrors.ErrTimeout) },
		func() error {
			for {
				osFile = nil
				err := guard(func() (err error) {
					db, err = bbolt.Open(path, 0o600, bo)
					return err
				})
				if err == nil && replaced(path, osFile) {
					// Before bbolt had the lock, a Compact renamed its copy
					// over the path: writes to the file locked would be lost.
					db.Close()
					db = nil
					if replacements++; replacements < maxReplacements {
						continue
					}
					return fmt.Errorf("another process replaced the file %d times while this one opened it: %w", replacements, store.ErrLocked)
				}
				if testHookLockBusy != nil && errors.Is(err, berrors.ErrTimeout) {
					testHookLockBusy(path)
				}
				return err
			}
		})
	// The wait's own errors: bbolt's neither wrap ErrLocked nor ctx's.
	if cerr := ctx.Err(); errors.Is(err, store.ErrLocked) || cerr != nil && errors.Is(err, cerr) {
		return nil, nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err != nil {
		if db == nil && osFile != nil && errors.Is(err, store.ErrCorrupt) {
			// bbolt panicked half-way through Open, holding the file and
			// its flock: release them, so it can be deleted and reopened.
			osFile.Close()
		}
		var pathErr *fs.PathError
		var errno syscall.Errno
		if !errors.Is(err, berrors.ErrTimeout) && !errors.Is(err, store.ErrCorrupt) && !errors.As(err, &pathErr) && !errors.As(err, &errno) {
			// bbolt reports most damage with plain errors ("invalid
			// database"): what is not the system's is the contents'.
			err = fmt.Errorf("%w: %w", store.ErrCorrupt, err)
		}
		return nil, nil, fileError(path, o, err)
	}
	// Reject files shorter than their metadata claims: reading a page past
	// the end of the mapping would crash the process later (SIGBUS).
	err = guard(func() error {
		return db.View(func(tx *bbolt.Tx) error {
			fi, err := os.Stat(path)
			if err != nil {
				return err
			}
			if tx.Size() > fi.Size() {
				return fmt.Errorf("file is %d bytes, its metadata says %d: %w", fi.Size(), tx.Size(), store.ErrCorrupt)
			}
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, nil, fileError(path, o, err)
	}
	return db, osFile, nil
}

// maxReplacements bounds how often openDB opens a replaced path again.
const maxReplacements = 10

// testHookOpened, when set by a test, is called after each successful
// bbolt.Open of openDB, before it checks that the path still names the file.
var testHookOpened func(path string)

// replaced reports whether path no longer names f, the file bbolt locked.
func replaced(path string, f *os.File) bool {
	if testHookOpened != nil {
		testHookOpened(path)
	}
	if f == nil {
		return false
	}
	opened, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err != nil || !os.SameFile(opened, now)
}

// fileError explains an error opening or reading path.
func fileError(path string, o store.Options, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return &lockedError{path: path, waited: o.LockTimeout}
	case errors.Is(err, store.ErrCorrupt):
		return withHint(fmt.Errorf("store: open %s: %w", path, err))
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return withHint(fmt.Errorf("store: open %s: %w: %w", path, store.ErrCorrupt, err))
	}
	return fmt.Errorf("store: open %s: %w", path, err)
}

// lockedError is returned when another process held the file for the
// whole lock timeout: a type, so that Compact can give its own advice.
type lockedError struct {
	path   string
	waited time.Duration
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("store: open %s: %v (waited %v; %s)", e.path, store.ErrLocked, e.waited, driver.LockTimeoutHint)
}

func (e *lockedError) Unwrap() error { return store.ErrLocked }

// guard runs fn, turning a panic or a memory fault (a page of the mapping
// that is not there) into ErrCorrupt: bbolt panics on some damaged files.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bbolt: %v", store.ErrCorrupt, r)
		}
	}()
	return fn()
}

// prepareStore looks up or creates the store o.Name in f, applies what
// driver.CompareMeta decides, and returns its resume point and why it was
// emptied, if it was. load reads the store after a write that changes what
// it holds, but before an upgrade: an unreadable store is left as it was.
func prepareStore(f *file, o store.Options, set *indexer.IndexSet, load func() error) (rv, reset string, err error) {
	want := driver.MetaFor(o, FormatVersion)
	// Only the bounded mode reads index entries (layout.go).
	wantEntries := o.CacheSize > 0
	var (
		exists, upgrade bool
		reopen          driver.Reopen
	)
	err = guard(func() error {
		return f.db.View(func(tx *bbolt.Tx) error {
			// The metadata first: a store of another format version
			// may have other buckets, and must be reported as such.
			root, err := rootBucket(tx)
			if err != nil {
				return err
			}
			b, err := lookupStore(root, []byte(o.Name))
			if err != nil || b == nil {
				return err
			}
			exists = true
			stored, err := getMeta(b)
			if err != nil {
				return err
			}
			fromV2 := stored.FormatVersion == formatSeqEntries
			if fromV2 || stored.FormatVersion == formatUnsealed {
				stored.FormatVersion, upgrade = FormatVersion, true
			}
			if reopen, err = driver.CompareMeta(o.Name, f.path, stored, want); err != nil {
				return err
			}
			if err := b.complete(); err != nil {
				return err
			}
			upgrade = upgrade || b.entries != wantEntries
			rv, err = getRV(b)
			return err
		})
	})
	if err != nil {
		if errors.Is(err, store.ErrIncompatible) {
			return "", "", err
		}
		return "", "", fileError(f.path, o, fmt.Errorf("store %q: %w", o.Name, err))
	}
	rewrite := !exists || reopen.Reset != "" || reopen.RebuildIndexes
	if !rewrite {
		if err := load(); err != nil {
			return "", "", err
		}
		if !upgrade {
			return rv, "", nil
		}
	}
	// One transaction, so a crash leaves the store as it was or should be.
	err = guard(func() error {
		return f.update(func(tx *bbolt.Tx) error {
			if !exists {
				root, err := createRoot(tx)
				if err != nil {
					return err
				}
				b, err := createStore(root, []byte(o.Name), want)
				if err != nil {
					return fmt.Errorf("create store %q: %w", o.Name, err)
				}
				return setEntries(b, want.Indexes, wantEntries)
			}
			b, err := storeBuckets(tx, o.Name)
			if err != nil {
				return err
			}
			// The version now: load may have stored index values
			// (writeIndexes), which makes the store version 4
			// without the entries that version 2 kept.
			stored, err := getMeta(b)
			if err != nil {
				return err
			}
			// Frame the records of format version 2 or 3 first.
			if err := sealAll(b); err != nil {
				return err
			}
			if stored.FormatVersion == formatSeqEntries {
				// Version 2 kept every entry, without the record.
				if err := markEntries(b, true); err != nil {
					return err
				}
			}
			switch {
			case reopen.Reset != "":
				if err := b.clear(want.Indexes); err != nil {
					return err
				}
				if err := putRV(b, ""); err != nil {
					return err
				}
				rv, reset = "", reopen.Reset
			case reopen.RebuildIndexes:
				// Every index value, decoded from the objects, and
				// entry if this mode keeps them.
				if err := markEntries(b, wantEntries); err != nil {
					return err
				}
				return writeIndexes(b, set, func(key string, seq uint64) ([][]string, error) {
					data, err := objectOf(b, key, seq)
					if err != nil {
						return nil, err
					}
					obj, err := indexer.Decode(o.Codec, data)
					if err != nil {
						return nil, fmt.Errorf("decode %s: %w", key, err)
					}
					return set.Values(key, obj)
				}, want)
			}
			if err := setEntries(b, want.Indexes, wantEntries); err != nil {
				return err
			}
			return putMeta(b, want)
		})
	})
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return "", "", fmt.Errorf("store: open %s in %s: rebuild indexes: %w", o.Name, f.path, err)
		}
		return "", "", fileError(f.path, o, fmt.Errorf("store %q: %w", o.Name, err))
	}
	if rewrite {
		if err := load(); err != nil {
			return "", "", err
		}
	}
	return rv, reset, nil
}

// maxNameLen bounds store names: bbolt does not check bucket names against
// its 32 KiB key limit.
const maxNameLen = 1024

func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// initialMmapSize is the size bbolt maps a file at from the start (address
// space only): a remap waits for every read transaction and copies the
// write transaction's nodes. etcd maps 10 GiB for the same reason.
const initialMmapSize = 1 << 30

// DiskSize implements store.DiskSizer: the bytes the file, shared by its
// stores, takes on disk (diskusage: bbolt grows it ahead of use).
func (s onFile) DiskSize() (int64, error) {
	fi, err := os.Stat(s.file.path)
	if err != nil {
		return 0, fmt.Errorf("store: disk size of %s: %w", s.file.path, err)
	}
	return diskusage.Of(fi), nil
}

var (
	_ store.DiskSizer = (*defaultStore)(nil)
	_ store.DiskSizer = (*bounded)(nil)
)
