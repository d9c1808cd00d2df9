package badger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/diskusage"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

// dbConfig is what the first store opened on a directory decides for the
// whole database. Tests make the sizes small to observe GC on little data.
type dbConfig struct {
	durability       store.Durability
	gcInterval       time.Duration
	memTableSize     int64
	valueLogFileSize int64
	minFree          int64 // 0 checks nothing
}

// DefaultGCInterval is how often the value log is garbage collected by
// default (URL parameter gc_interval).
const DefaultGCInterval = 5 * time.Minute

// DefaultMinFree is the free space a database keeps on its file system by
// default (URL parameter min_free): what badger writes on its own between
// two commits (a memtable flush, a compaction, a value-log GC rewrite).
const DefaultMinFree = 128 << 20

func defaultDBConfig() dbConfig {
	return dbConfig{
		durability:       store.DurabilitySync,
		gcInterval:       DefaultGCInterval,
		memTableSize:     16 << 20,
		valueLogFileSize: 64 << 20,
		minFree:          DefaultMinFree,
	}
}

// freeSpace is replaced by tests to run out of space on demand.
var freeSpace = diskusage.Free

// spaceCheckBytes is how much a write batch writes between two checks of
// the free space.
const spaceCheckBytes = 4 << 20

// checkSpace fails with an error wrapping syscall.ENOSPC if writing need
// more bytes would leave less than cfg.minFree free. Badger grows its
// memory-mapped files without allocating their blocks, so on a full disk it
// faults (SIGBUS) in its own goroutines and the process ends; checking first
// makes it an error of the write, which leaves the store as it was. Where
// the platform does not tell the free space, nothing is checked.
func (sh *sharedDB) checkSpace(need int64) error {
	return checkFree(sh.dir, sh.cfg.minFree, need)
}

func checkFree(dir string, minFree, need int64) error {
	if minFree == 0 {
		return nil
	}
	free, ok, err := freeSpace(dir)
	if err != nil {
		return fmt.Errorf("check the free space of %s: %w", dir, err)
	}
	if !ok || free-need >= minFree {
		return nil
	}
	return fmt.Errorf("%s free on the file system of %s, and badger keeps min_free=%s there (a badger write that finds the disk full ends the process); free some space or lower min_free: %w",
		mib(free), dir, mib(minFree), syscall.ENOSPC)
}

func mib(n int64) string { return fmt.Sprintf("%.1fMi", float64(n)/(1<<20)) }

// sharedDB is one open badger database, shared by the stores opened on its
// directory in this process (registry).
type sharedDB struct {
	dir string
	db  *badger.DB
	cfg dbConfig

	stopGC chan struct{}
	gcDone chan struct{}
	gcMu   sync.Mutex // serializes GC runs (badger rejects overlapping ones)

	// oldGens deletes the generations stores switched away from; the
	// database closes only once they are over.
	oldGens   background
	syncFault syncFault
	stores    *storesList
}

// background runs goroutines and waits for them. Unlike a sync.WaitGroup,
// it may be waited for while goroutines start: stores close and write
// independently.
type background struct {
	mu   sync.Mutex
	idle sync.Cond // signalled when n drops to 0; L is mu
	n    int
}

func (b *background) Go(f func()) {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	go func() {
		defer func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.n--; b.n == 0 && b.idle.L != nil {
				b.idle.Broadcast()
			}
		}()
		f()
	}()
}

// Wait returns once no goroutine started by Go runs.
func (b *background) Wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.idle.L == nil {
		b.idle.L = &b.mu
	}
	for b.n > 0 {
		b.idle.Wait()
	}
}

// registry holds the open databases by cleaned absolute directory.
var registry rawdb.Registry[*sharedDB]

// acquire opens (or shares) the database in dir and reserves the store name
// ("": a raw read's reference). Opens of the same directory wait for the
// first, which may wait for another process's lock. A raw access shares the
// database whatever its durability.
func acquire(ctx context.Context, dir, name string, cfg dbConfig, lockTimeout time.Duration, raw bool) (*sharedDB, error) {
	open := func() (*sharedDB, error) {
		sh := &sharedDB{dir: dir, cfg: cfg}
		db, stores, err := openDB(ctx, dir, cfg, lockTimeout, &sh.syncFault)
		if err != nil {
			return nil, err
		}
		sh.db, sh.stores = db, stores
		if cfg.gcInterval > 0 {
			sh.stopGC, sh.gcDone = make(chan struct{}), make(chan struct{})
			go sh.gcLoop()
		}
		return sh, nil
	}
	use := func(sh *sharedDB, inUse bool) (<-chan struct{}, error) {
		if inUse {
			return nil, fmt.Errorf("store: open %s in badger://%s: %w (close it first)", name, dir, store.ErrInUse)
		}
		if !raw && sh.cfg.durability != cfg.durability {
			return nil, fmt.Errorf("store: open %s in badger://%s: durability %q, but the database is already open with %q: all stores of one directory share one durability: %w",
				name, dir, cfg.durability, sh.cfg.durability, store.ErrInvalid)
		}
		return nil, nil
	}
	return registry.Acquire(dir, name, open, use, func(opened <-chan struct{}, _ bool) error {
		select {
		case <-opened:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("store: open %s in badger://%s: %w", name, dir, ctx.Err())
		}
	})
}

// release gives back the store name ("": a raw read's reference) and closes
// the database with its last user.
func (sh *sharedDB) release(name string) error {
	return registry.Release(sh.dir, name, func(sh *sharedDB) error {
		sh.oldGens.Wait() // a raw write's; stores waited in space.Close
		if sh.stopGC != nil {
			close(sh.stopGC)
			<-sh.gcDone
		}
		err := sh.db.Close()
		chmodFiles(sh.dir)
		if err != nil {
			return fmt.Errorf("store: close badger://%s: %w", sh.dir, err)
		}
		return nil
	})
}

func (sh *sharedDB) gcLoop() {
	defer close(sh.gcDone)
	t := time.NewTicker(sh.cfg.gcInterval)
	defer t.Stop()
	for {
		select {
		case <-sh.stopGC:
			return
		case <-t.C:
			sh.runGC(sh.stopGC)
		}
	}
}

// runGC rewrites value-log files until none is worth it or stop is closed,
// and returns how many it rewrote.
func (sh *sharedDB) runGC(stop <-chan struct{}) int {
	sh.gcMu.Lock()
	defer sh.gcMu.Unlock()
	n := 0
	for {
		select {
		case <-stop:
			return n
		default:
		}
		// A rewrite writes up to a file's live half first.
		if err := sh.checkSpace(sh.cfg.valueLogFileSize / 2); err != nil {
			klog.Background().Error(err, "Badger value log GC skipped", "dir", sh.dir)
			return n
		}
		// Half garbage: badger's advice (write amplification 2).
		err := sh.db.RunValueLogGC(0.5)
		if err != nil {
			if !errors.Is(err, badger.ErrNoRewrite) && !errors.Is(err, badger.ErrRejected) {
				klog.Background().Error(err, "Badger value log GC failed", "dir", sh.dir)
			}
			return n
		}
		n++
	}
}

// badgerOptions tames badger's memory and disk use for an informer cache:
// objects of a few KiB, written in batches, read mostly from memory.
func badgerOptions(dir string, cfg dbConfig, fault *syncFault) badger.Options {
	return badger.DefaultOptions(dir).
		WithSyncWrites(cfg.durability == store.DurabilitySync).
		WithNumVersionsToKeep(1).
		WithLogger(klogAdapter{dir: dir, syncFault: fault}).
		// Memtables dominate RSS: badger's default is five of 64 MiB.
		WithMemTableSize(cfg.memTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		// Only the bounded mode reads tables, mostly index entries.
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(8 << 20).
		WithValueThreshold(valueThreshold).
		// The default 1 GiB file is mapped at twice its size.
		WithValueLogFileSize(cfg.valueLogFileSize).
		// Besides finding damage, this keeps a damaged entry from hanging
		// the database: badger v4.9.6's valueLog.Read fails an entry whose
		// header claims more bytes than were read without releasing the
		// file's read lock, so every later Close waits for ever; the
		// checksum fails first, on a path that releases it.
		WithVerifyValueChecksum(true).
		// Protobuf does not compress much; save the CPU.
		WithCompression(options.None).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithMetricsEnabled(false).
		// One writer per store, and stores own disjoint keys.
		WithDetectConflicts(false)
}

// openDB opens badger in dir, retrying while another process holds the
// directory lock, checks it against its stores file (see storesFile), and
// maps failures to store errors.
func openDB(ctx context.Context, dir string, cfg dbConfig, lockTimeout time.Duration, fault *syncFault) (db *badger.DB, stores *storesList, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("store: open badger://%s: %w", dir, err)
		}
	}()
	// Before the chmod below would hide a link or a writable directory.
	if err := driver.CheckPath(dir, true); err != nil {
		return nil, nil, err
	}
	// Before anything changes the directory: others' files stay as they are.
	existed, err := checkNotForeign(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create directory: %w", err)
	}
	// The cache holds cluster objects (Secrets, maybe): owner only,
	// whatever the umask or an existing directory's mode.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, nil, err
	}
	// Opening writes too: badger flushes the memtables it replays.
	if err := checkFree(dir, cfg.minFree, 0); err != nil {
		return nil, nil, err
	}
	err = retryLocked(ctx, lockTimeout, func() (err error) {
		// A directory that was empty may have been filled meanwhile by
		// the process whose lock made the last attempt fail (and that
		// process may have been killed): check it then too.
		db, err = checkAndOpen(dir, cfg, existed || dirHasFiles(dir), fault)
		if err != nil && !isLockError(err) && (errors.Is(err, errDamaged) || existed && !errors.Is(err, fs.ErrPermission)) {
			err = corruptDB(err)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	chmodFiles(dir)
	if stores, err = openStoresList(dir, db); err != nil {
		if cerr := db.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if errors.Is(err, errDamaged) {
			err = corruptDB(err)
		}
		return nil, nil, err
	}
	return db, stores, nil
}

// corruptDB is the error of a database that cannot be read (err).
func corruptDB(err error) error {
	return fmt.Errorf("cannot read the database (delete the directory to start over; informers relist): %w: %w", store.ErrCorrupt, err)
}

// retryLocked calls try until it fails with something else than a
// directory-lock error (isLockError), or timeout passes or ctx ends.
func retryLocked(ctx context.Context, timeout time.Duration, try func() error) error {
	err := rawdb.WaitLock(ctx, timeout, 10*time.Millisecond, 200*time.Millisecond, "the directory lock", isLockError, try)
	if isLockError(err) {
		return fmt.Errorf("%w (waited %v; %s)", store.ErrLocked, timeout, driver.LockTimeoutHint)
	}
	return err
}

// errDamaged marks what checkFiles finds: damage a crash cannot leave.
var errDamaged = errors.New("damaged")

// checkAndOpen checks the files of an existing directory (checkFiles) and
// opens badger on it. The check runs under badger's directory lock, so it
// never reads files another process is writing; a busy directory fails with
// a lock error, and the caller retries both steps (the lock is dropped
// just before badger.Open takes it again).
func checkAndOpen(dir string, cfg dbConfig, existed bool, fault *syncFault) (db *badger.DB, err error) {
	if existed {
		unlock, err := lockDir(dir)
		if err != nil {
			return nil, err
		}
		err = checkFiles(dir)
		unlock()
		if err != nil {
			return nil, err
		}
	}
	// badger panics on some damaged files.
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("badger panicked: %v", r)
		}
	}()
	return badger.Open(badgerOptions(dir, cfg, fault))
}

// checkFiles prepares a directory for badger.Open after a crash, and
// rejects damage, which badger would panic on in its own goroutines or
// silently skip.
//
// A kill -9 leaves, and badger copes with: tables the MANIFEST does not
// list (badger deletes them; not read here), a torn last MANIFEST change,
// torn tails of the .mem and .vlog logs. It may also leave empty .mem and
// .vlog files (killed before sizing them), which fail badger's first open:
// they hold nothing and are removed here.
//
// Damage is errDamaged: a MANIFEST missing while tables exist, unreadable,
// or failing its checksum; a table it lists missing or failing its
// checksums; a value-log header naming an encryption key.
func checkFiles(dir string) error {
	listed, err := listedTables(dir)
	if err != nil {
		return err
	}
	for _, id := range listed {
		path := table.NewFilename(id, dir)
		if err := verifyTable(path); err != nil {
			return fmt.Errorf("%w: table %s, listed in the MANIFEST: %w", errDamaged, path, err)
		}
	}
	return checkLogs(dir)
}

// listedTables returns the ids of the tables the MANIFEST of dir lists, read
// with badger's own replay.
func listedTables(dir string) ([]uint64, error) {
	path := filepath.Join(dir, badger.ManifestFilename)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		// A first open killed early leaves none, but no tables either.
		tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
		if err != nil {
			return nil, err
		}
		if len(tables) > 0 {
			return nil, fmt.Errorf("%w: no %s, but %d table files", errDamaged, path, len(tables))
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir).WithLogger(klogAdapter{dir: dir}))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errDamaged, path, err)
	}
	ids := make([]uint64, 0, len(m.Tables))
	for id := range m.Tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// checkLogs removes the 0-byte .mem and .vlog files of dir (see checkFiles;
// badger sizes and fills every file it creates), and checks that the first
// 8 bytes of every value-log file, its encryption key id, are zero (this
// backend never encrypts): a damaged header makes badger.Open fail after
// starting goroutines it does not stop (v4.9.6).
func checkLogs(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, e := range ents {
		name, path := e.Name(), filepath.Join(dir, e.Name())
		vlog := strings.HasSuffix(name, ".vlog")
		if !e.Type().IsRegular() || !vlog && !strings.HasSuffix(name, ".mem") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Size() == 0 {
			klog.Background().V(2).Info("Removing an empty badger log file left by a crash", "file", path)
			if err := os.Remove(path); err != nil {
				return err
			}
			removed = true
			continue
		}
		if !vlog {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		var hdr [8]byte
		_, err = io.ReadFull(f, hdr[:])
		f.Close()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// A crash leaves a new file empty or sized, never this short.
			return fmt.Errorf("%w: value log %s: shorter than its header", errDamaged, path)
		}
		if err != nil {
			return fmt.Errorf("value log %s: %w", path, err)
		}
		if hdr != [8]byte{} {
			return fmt.Errorf("%w: value log %s: bad header (encryption key id %x)", errDamaged, path, hdr)
		}
	}
	if removed {
		return syncDir(dir)
	}
	return nil
}

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

// verifyTable verifies the checksums of the table at path (keys and small
// values only: it reads little).
func verifyTable(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("badger panicked: %v", r)
		}
	}()
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return errors.New("empty file")
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	t, err := table.OpenTable(mf, table.Options{
		ReadOnly:    true,
		ChkMode:     options.OnTableRead,
		Compression: options.None,
		BlockSize:   4 << 10,
	})
	if err != nil {
		return err
	}
	// Not t.DecrRef, which deletes the file; -1: no truncation.
	return t.Close(-1)
}

// errDirLocked is lockDir's failure: another process holds the directory.
var errDirLocked = errors.New("another process is using this badger database")

// isLockError tells a directory-lock failure: lockDir's, or badger's, whose
// message is all there is.
func isLockError(err error) bool {
	return errors.Is(err, errDirLocked) || (err != nil && strings.Contains(err.Error(), "Cannot acquire directory lock"))
}

// checkNotForeign refuses a directory that holds files but no badger
// database (a URL pointing at the wrong directory), which badger.Open would
// fill and openDB chmod. A database has a MANIFEST or KEYREGISTRY;
// without either, only badger's own file names are accepted (a first open
// killed early). lost+found is ignored: a freshly formatted volume has it.
// It also reports whether dir holds anything.
func checkNotForeign(dir string) (hasFiles bool, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var foreign []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == badger.ManifestFilename || name == badger.KeyRegistryFileName:
			return true, nil
		case isBadgerFile(name), name == "lost+found" && e.IsDir():
		default:
			foreign = append(foreign, name)
		}
	}
	if len(foreign) == 0 {
		return len(ents) > 0, nil
	}
	return true, fmt.Errorf("directory is not empty and holds no badger database (no %s or %s; it holds %s): give an empty or new directory: %w",
		badger.ManifestFilename, badger.KeyRegistryFileName, quoteFirst(foreign, 3), store.ErrInvalid)
}

// isBadgerFile reports whether name is one badger (v4) gives the files of a
// database, or the stores file (storesFile).
func isBadgerFile(name string) bool {
	switch name {
	case "LOCK", badger.ManifestFilename, "MANIFEST-REWRITE", badger.KeyRegistryFileName, badger.KeyRegistryRewriteFileName, "DISCARD",
		storesFile, storesFileTmp:
		return true
	}
	for _, ext := range []string{".sst", ".vlog", ".mem"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

func dirHasFiles(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}

// chmodFiles makes the database files owner-only (badger creates most with
// 0666 less the umask), so they stay private when copied.
func chmodFiles(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			_ = os.Chmod(filepath.Join(dir, e.Name()), 0o600)
		}
	}
}

// klogAdapter sends badger's log to klog, all but errors at high verbosity;
// it records in syncFault, if set, the one write failure badger only logs.
type klogAdapter struct {
	dir       string
	syncFault *syncFault
}

func (l klogAdapter) Errorf(f string, args ...interface{}) {
	if f == badgerVlogSyncFailed && l.syncFault != nil {
		l.syncFault.record(args)
	}
	klog.Background().Error(nil, "Badger: "+strings.TrimSpace(fmt.Sprintf(f, args...)), "dir", l.dir)
}

// badgerVlogSyncFailed is how badger (v4.9.6, valueLog.write) logs a failed
// fsync of its value log, which it does not return (pinned by
// TestBadgerLogsVlogSyncFailure).
const badgerVlogSyncFailed = "Error while curlf sync: %v\n"

// syncFault records the first write of the database that may have failed
// to reach the disk: a failed fsync of the value log, which badger only
// logs (before it releases the commits, which return nil), or any error of
// badger's write goroutine after a transaction was handed over (see update).
//
// It is sticky: after a failed fsync the kernel may drop the pages and
// report the next fsync as a success, and badger replays its logs only up
// to the first damaged entry, so no later write is known durable. Writes
// fail (see durable) until the database is opened again.
type syncFault struct {
	err atomic.Pointer[error]
}

// record keeps the first failure: args are those of badgerVlogSyncFailed.
func (f *syncFault) record(args []interface{}) {
	err := fmt.Errorf("fsync of the value log failed: %v", args)
	if len(args) == 1 {
		if cause, ok := args[0].(error); ok {
			err = fmt.Errorf("fsync of the value log failed: %w", cause)
		}
	}
	f.err.CompareAndSwap(nil, &err)
}

// recordWrite keeps err, an error of badger's write goroutine.
func (f *syncFault) recordWrite(err error) {
	err = fmt.Errorf("badger's write of a transaction failed: %w", err)
	f.err.CompareAndSwap(nil, &err)
}

func (f *syncFault) failed() error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}

// durable returns err, or, when err is nil, an error if a write may have
// failed to reach the disk since the database opened (see syncFault). Every
// write that makes something durable checks it before it returns.
func (sh *sharedDB) durable(err error) error {
	if err != nil {
		return err
	}
	if ferr := sh.syncFault.failed(); ferr != nil {
		return fmt.Errorf("badger://%s: %w: %w; the write may be on disk or not, and no later write would be known durable: writes fail until every store of the directory is closed and opened again (restart the process)", sh.dir, store.ErrWritesStopped, ferr)
	}
	return nil
}

// update runs fn in a badger transaction and commits it, unless a write has
// failed to reach the disk (see syncFault). It returns fn's error or the
// commit's (see writeFailed); nil means written, not durable: the caller
// makes the write current, then checks durable.
func (sh *sharedDB) update(fn func(txn *badger.Txn) error) error {
	if err := sh.durable(nil); err != nil {
		return err
	}
	var fnErr error
	stopWriteback := func() {}
	defer func() { stopWriteback() }()
	err := sh.db.Update(func(txn *badger.Txn) error {
		fnErr = fn(txn)
		if fnErr == nil {
			stopWriteback = sh.startWriteback()
		}
		return fnErr
	})
	if err == nil && testHookCommitted != nil {
		err = testHookCommitted(sh)
	}
	if fnErr != nil {
		return err
	}
	return sh.writeFailed(err)
}

// writeFailed returns err, an error of a badger commit, unless it came from
// badger's write goroutine after the transaction was handed over (all but
// ErrTxnTooBig, ErrBlockedWrites, ErrConflict and ErrDBClosed): then it is
// unknown whether the transaction is on disk, and err goes to syncFault.
func (sh *sharedDB) writeFailed(err error) error {
	if err == nil || errors.Is(err, badger.ErrTxnTooBig) || errors.Is(err, badger.ErrBlockedWrites) ||
		errors.Is(err, badger.ErrConflict) || errors.Is(err, badger.ErrDBClosed) {
		return err
	}
	sh.syncFault.recordWrite(err)
	return sh.durable(nil)
}

// batch is a badger WriteBatch (transactions committed in the background as
// they fill up) held to update's rule (see writeFailed), which checks the
// free space every spaceCheckBytes it sets. Keys are valid for badger and
// Set refuses a value badger would, so an error of Set or Delete is one of
// an earlier commit of the batch.
type batch struct {
	wb *badger.WriteBatch
	sh *sharedDB
	// stopWriteback ends the writeback of badger's logs (startWriteback)
	// that runs while the batch commits, at Flush or Cancel.
	stopWriteback func()
	pending       int64 // bytes Set since the last check of the free space, or -1 before the first
}

func (sh *sharedDB) newBatch() *batch {
	return &batch{wb: sh.db.NewWriteBatch(), sh: sh, stopWriteback: sh.startWriteback(), pending: -1}
}

func (b *batch) Set(k, v []byte) error {
	if err := b.sh.durable(nil); err != nil {
		return err
	}
	if n := int64(len(v)); n > b.sh.cfg.valueLogFileSize {
		// Badger's error would read as a failed commit (writeFailed).
		return fmt.Errorf("a value of %d bytes is larger than badger's largest, a value-log file (%d bytes): %w", n, b.sh.cfg.valueLogFileSize, store.ErrInvalid)
	}
	if b.pending < 0 || b.pending >= spaceCheckBytes {
		// Twice the bytes to come: a value goes to the value log and
		// its pointer to the write-ahead log and, later, a table.
		if err := b.sh.checkSpace(2 * spaceCheckBytes); err != nil {
			return err
		}
		b.pending = 0
	}
	b.pending += int64(len(k) + len(v))
	return b.sh.writeFailed(b.wb.Set(k, v))
}

func (b *batch) Delete(k []byte) error {
	if err := b.sh.durable(nil); err != nil {
		return err
	}
	return b.sh.writeFailed(b.wb.Delete(k))
}

// Flush commits what is left and waits for every commit of the batch.
func (b *batch) Flush() error {
	defer b.stopWriteback()
	if err := b.sh.durable(nil); err != nil {
		return err
	}
	err := b.wb.Flush()
	if err == nil && testHookFlushed != nil {
		err = testHookFlushed(b.sh)
	}
	return b.sh.writeFailed(err)
}

// Cancel drops what is not committed yet; call it when the batch is not
// flushed.
func (b *batch) Cancel() {
	b.wb.Cancel()
	b.stopWriteback()
}

// testHookCommitted and testHookFlushed, set by tests, run after update's
// commit and batch.Flush; their error replaces the nil of badger's write
// goroutine.
var testHookCommitted, testHookFlushed func(sh *sharedDB) error

func (l klogAdapter) Warningf(f string, args ...interface{}) { l.log(4, f, args) }
func (l klogAdapter) Infof(f string, args ...interface{})    { l.log(4, f, args) }
func (l klogAdapter) Debugf(f string, args ...interface{})   { l.log(5, f, args) }

func (l klogAdapter) log(v int, f string, args []interface{}) {
	klog.Background().V(v).Info("Badger: "+strings.TrimSpace(fmt.Sprintf(f, args...)), "dir", l.dir)
}

// syncBatches syncs badger's files when the database's durability is d:
// writes of batches (and, with nosync, of transactions) are not synced as
// they commit; badger writes in order, and this covers rotated files too.
func (sh *sharedDB) syncBatches(d store.Durability) error {
	if sh.cfg.durability != d {
		return nil
	}
	return sh.db.Sync()
}

// diskSize returns the bytes the files of the database take on disk (see
// diskusage). Badger's own Size is refreshed once a minute, leaves memtables
// out and counts preallocated sizes.
func (sh *sharedDB) diskSize() (int64, error) {
	entries, err := os.ReadDir(sh.dir)
	if err != nil {
		return 0, fmt.Errorf("store: disk size of %s: %w", sh.dir, err)
	}
	var n int64
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile (a compaction, a value-log GC)
		}
		if err != nil {
			return 0, fmt.Errorf("store: disk size of %s: %w", sh.dir, err)
		}
		n += diskusage.Of(fi)
	}
	return n, nil
}
