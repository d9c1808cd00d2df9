package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

// Raw returns the bolt driver with record-level access (store.RawDriver),
// for the snapshot tool. Its Open is the registered driver's.
func Raw() store.RawDriver { return rawDriver{readView} }

// rawDriver implements store.RawDriver; its Reader (readView) serves
// Stores, ListStores and Export. It is safe for concurrent use.
type rawDriver struct{ rawdb.Reader }

var (
	_ store.RawDriver = rawDriver{}
	_ store.Exporter  = (*bounded)(nil)
)

// bucketImport is the top-level bucket where Import builds a store before
// moving it under bucketStores, over what a crashed Import left.
var bucketImport = []byte("snapshot-import")

// errNothingStaged rolls back the cleanup of an Import that staged nothing.
var errNothingStaged = errors.New("nothing staged")

// importBatch and importBatchBytes bound the records an Import writes per
// bbolt transaction, whose dirty pages bbolt keeps in memory.
const (
	importBatch      = 4096
	importBatchBytes = 32 << 20
)

func (rawDriver) Open(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
	p := driver.NewParams(u)
	p.Common(&opts)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if _, err := driver.AbsPath(u, wantURL); err != nil {
		return nil, fmt.Errorf("store: open %s://%s%s: %w", u.Scheme, u.Host, u.Path, err)
	}
	return open(ctx, u.Path, opts)
}

// wantURL is the form of a bolt URL, for errors.
const wantURL = "an absolute file path, bolt:///abs/path/file.db"

// rawPath checks u and returns its options and canonical path.
func rawPath(op string, u *url.URL) (string, store.Options, error) {
	_, o, err := rawdb.RawOptions(op, u, wantURL, nil)
	if err != nil {
		return "", o, err
	}
	path, err := filePath(u.Path)
	if err != nil {
		return "", o, fmt.Errorf("store: %s %s: %w", op, u.Redacted(), err)
	}
	return path, o, nil
}

// withFile runs fn on the database at u, shared with this process's stores
// or opened for the call (see openFile), naming op and u in errors.
func withFile(ctx context.Context, op string, u *url.URL, write bool, fn func(f *file) error) (err error) {
	path, o, err := rawPath(op, u)
	if err != nil {
		return err
	}
	f, err := openFile(ctx, path, "", o, write, nil)
	if err != nil {
		return withHint(fmt.Errorf("store: %s %s: %w", op, u.Redacted(), err))
	}
	defer func() { err = errors.Join(err, f.release("")) }()
	return fn(f)
}

// readView runs fn on a view of the file at u in one read transaction.
func readView(ctx context.Context, op string, u *url.URL, fn func(v *rawdb.View) error) error {
	return withFile(ctx, op, u, false, func(f *file) error {
		return viewFile(f, u.Redacted(), fn)
	})
}

// viewFile runs fn on a view of f (named where) in one read transaction.
func viewFile(f *file, where string, fn func(v *rawdb.View) error) (err error) {
	var tx *bbolt.Tx
	if err := guard(func() (err error) {
		tx, err = f.db.Begin(false)
		return err
	}); err != nil {
		return withHint(fmt.Errorf("store: view %s: %w", where, err))
	}
	defer func() {
		if rerr := tx.Rollback(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("store: view %s: end the read transaction: %w", where, rerr))
		}
	}()
	return fn(&rawdb.View{Tx: rawTx{tx}, Backend: Scheme, Where: where, Guard: guard, Wrap: withHint})
}

// IndexEntries calls fn with every index entry (index name, value, object
// key) of the store name in the database at u, in one read transaction (see
// rawdb.Tx.IndexEntries). Its signature is snapshot.IndexEntries.
func IndexEntries(ctx context.Context, u *url.URL, name string, fn func(index, value, key string) error) error {
	return rawdb.Reader(readView).IndexEntries(ctx, u, name, fn)
}

// Export implements store.Exporter for an open bounded store: one read
// transaction, so the records and the resume point agree.
func (s *bounded) Export(ctx context.Context, fn func(store.Record) error) (info store.Info, err error) {
	if err := s.CheckOpen("export"); err != nil {
		return store.Info{}, err
	}
	err = viewFile(s.file, Scheme+"://"+s.file.path, func(v *rawdb.View) error {
		info, err = v.Export(ctx, s.Info().Name, fn)
		return err
	})
	return info, err
}

// rawTx is a read transaction as rawdb reads it. Its callers guard it.
type rawTx struct{ tx *bbolt.Tx }

// EachStore implements rawdb.Tx, in name order. A store with incomplete
// buckets is ErrCorrupt; damage above the stores fails the call.
func (t rawTx) EachStore(ctx context.Context, fn func(name string, info store.Info, err error) error) error {
	root, err := rootBucket(t.tx)
	if err != nil || root == nil {
		return err
	}
	return root.ForEachBucket(func(k []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var info store.Info
		err := guard(func() (err error) {
			info, _, err = rawInfo(t.tx, string(k))
			return err
		})
		return fn(string(k), info, err)
	})
}

// Export implements rawdb.Tx.
func (t rawTx) Export(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error) {
	info, b, err := rawInfo(t.tx, name)
	if err != nil {
		return store.Info{}, err
	}
	err = eachKeyRecord(b, len(info.Indexes), func(key string, seq uint64, vals [][]string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := objectOf(b, key, seq)
		if err != nil {
			return err
		}
		return fn(store.Record{Key: key, Data: data, Values: vals})
	})
	if err != nil {
		return store.Info{}, err
	}
	return info, nil
}

// IndexEntries implements rawdb.Tx.
func (t rawTx) IndexEntries(ctx context.Context, name string, fn func(index, value, key string) error) error {
	info, b, err := rawInfo(t.tx, name)
	if err != nil {
		return err
	}
	if !b.entries {
		return eachKeyRecord(b, len(info.Indexes), func(key string, _ uint64, vals [][]string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return rawdb.ImpliedEntries(info.Indexes, key, vals, fn)
		})
	}
	indexes := func() ([]string, error) { return info.Indexes, nil }
	return b.index.ForEachBucket(func(idx []byte) error {
		return eachEntry(b, b.index.Bucket(idx), string(idx), indexes, false, func(value, key string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fn(string(idx), value, key)
		})
	})
}

// corruptHint is what every ErrCorrupt of this backend advises.
const corruptHint = "(delete the file to start over; informers relist)"

// hinted is an error that ends in corruptHint, even wrapped further.
type hinted struct{ err error }

func (h hinted) Error() string { return h.err.Error() + " " + corruptHint }
func (h hinted) Unwrap() error { return h.err }

// withHint appends corruptHint to an ErrCorrupt that lacks it.
func withHint(err error) error {
	var h hinted
	if !errors.Is(err, store.ErrCorrupt) || errors.As(err, &h) {
		return err
	}
	return hinted{err}
}

// rawInfo returns the Info and buckets of the store name in tx.
func rawInfo(tx *bbolt.Tx, name string) (store.Info, *buckets, error) {
	root, err := rootBucket(tx)
	if err != nil {
		return store.Info{}, nil, err
	}
	b, err := lookupStore(root, []byte(name))
	if err != nil {
		return store.Info{}, nil, err
	}
	if b == nil {
		return store.Info{}, nil, fmt.Errorf("store %q: %w", name, store.ErrNotFound)
	}
	m, err := getMeta(b)
	if err != nil {
		return store.Info{}, nil, fmt.Errorf("store %q: %w", name, err)
	}
	switch m.FormatVersion {
	case formatSeqEntries:
		// The same buckets, with every index entry, unframed.
		b.entries = true
	case formatUnsealed, FormatVersion:
		// getMeta checked that a version with frames has them.
	default:
		return store.Info{}, nil, fmt.Errorf("store %q: format version %d, this build reads %d %s: %w", name, m.FormatVersion, FormatVersion, corruptHint, store.ErrIncompatible)
	}
	if err := b.complete(); err != nil {
		return store.Info{}, nil, err
	}
	rv, err := getRV(b)
	if err != nil {
		return store.Info{}, nil, err
	}
	return m.Info(Scheme, name, rv), b, nil
}

// Import implements store.RawDriver: the store is built under bucketImport,
// then moved over the old one; a failure or crash before leaves it as is.
func (rawDriver) Import(ctx context.Context, u *url.URL, info store.Info, next func() (store.Record, error)) error {
	name := info.Name
	fail := func(err error) error {
		return withHint(fmt.Errorf("store: import %s into %s: %w", name, u.Redacted(), err))
	}
	if err := rawdb.CheckImport(info, maxNameLen); err != nil {
		return fail(err)
	}
	return withFile(ctx, "import "+name, u, true, func(f *file) error {
		release, ok := f.reserve(name)
		if !ok {
			return fail(fmt.Errorf("%w (close it first)", store.ErrInUse))
		}
		defer release()
		recs, err := rawdb.NewRecords(info, FormatVersion, next)
		if err == nil {
			err = importDB(ctx, f, []byte(name), recs)
		}
		if err != nil {
			// Drop what was staged, if anything: else roll back, as even
			// an empty commit writes a meta page.
			_ = guard(func() error {
				return f.update(func(tx *bbolt.Tx) error {
					if ib := tx.Bucket(bucketImport); ib != nil && ib.Bucket([]byte(name)) != nil {
						return ib.DeleteBucket([]byte(name))
					}
					return errNothingStaged
				})
			})
			return fail(err)
		}
		return nil
	})
}

// reserve takes name in f for a raw write (Import, Drop), so that no store
// opens on it meanwhile; false if a store of this process has it open.
func (f *file) reserve(name string) (release func(), ok bool) {
	if !files.Reserve(f.path, name) {
		return nil, false
	}
	// Not the last reference: the caller's withFile holds one.
	return func() { _ = f.release(name) }, true
}

// Drop implements store.RawDriver: the store's bucket, and what an Import
// of the name staged, go in one transaction, whole or not at all. Only the
// store must be closed (store.ErrInUse). The file does not shrink.
func (rawDriver) Drop(ctx context.Context, u *url.URL, name string) error {
	fail := func(err error) error {
		return withHint(fmt.Errorf("store: drop %s from %s: %w", name, u.Redacted(), err))
	}
	if err := rawdb.CheckName(name, maxNameLen); err != nil {
		return fail(err)
	}
	path, _, err := rawPath("drop "+name, u)
	if err != nil {
		return err
	}
	// withFile opens for writing, which would create a missing file, or
	// initialise an empty one: neither holds a store to drop.
	if fi, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fail(fmt.Errorf("%w: %w", store.ErrNotFound, err))
	} else if err == nil && fi.Size() == 0 {
		return fail(fmt.Errorf("empty file (0 bytes), no store in it: %w", store.ErrNotFound))
	}
	return withFile(ctx, "drop "+name, u, true, func(f *file) error {
		release, ok := f.reserve(name)
		if !ok {
			return fail(fmt.Errorf("the store is open in this process: %w (close it first)", store.ErrInUse))
		}
		defer release()
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		// A refused drop rolls back, leaving the file as it was.
		err := guard(func() error {
			return f.update(func(tx *bbolt.Tx) error {
				root, err := rootBucket(tx)
				if err != nil {
					return err
				}
				// Whatever the store's format or state: dropping is also
				// the way out of a store this build cannot open.
				if root == nil || root.Bucket([]byte(name)) == nil {
					return fmt.Errorf("no store %q in the file: %w", name, store.ErrNotFound)
				}
				if err := root.DeleteBucket([]byte(name)); err != nil {
					return err
				}
				return dropBucket(tx.Bucket(bucketImport), []byte(name))
			})
		})
		if err != nil {
			return fail(err)
		}
		return nil
	})
}

// importDB stages the store name in f with recs, then moves it in place.
func importDB(ctx context.Context, f *file, name []byte, recs *rawdb.Records) error {
	err := guard(func() error {
		return f.update(func(tx *bbolt.Tx) error {
			// A file that lost its stores bucket is refused: the final
			// move would bury the old stores under a new one.
			if _, err := rootBucket(tx); err != nil {
				return err
			}
			ib, err := tx.CreateBucketIfNotExists(bucketImport)
			if err != nil {
				return err
			}
			if err := dropBucket(ib, name); err != nil {
				return err
			}
			_, err = createStore(ib, name, recs.Meta)
			return err
		})
	})
	if err != nil {
		return err
	}
	var pending []store.Record
	for done := false; !done; {
		size := 0
		for len(pending) < importBatch && size < importBatchBytes {
			rec, err := recs.Next(ctx)
			if errors.Is(err, io.EOF) {
				done = true
				break
			}
			if err != nil {
				return err
			}
			pending = append(pending, rec)
			size += len(rec.Key) + len(rec.Data)
		}
		slices.SortFunc(pending, func(a, b store.Record) int { return bytes.Compare(boltKey(a.Key), boltKey(b.Key)) })
		err := guard(func() error {
			return f.update(func(tx *bbolt.Tx) error {
				b, err := storeIn(tx.Bucket(bucketImport), name)
				if err != nil {
					return err
				}
				// Full pages: objects are appended, keys sorted per
				// batch (a bolt snapshot's all are); keys out of order
				// split full pages, no worse than the default fill.
				b.objects.FillPercent, b.keys.FillPercent = 1.0, 1.0
				seq, err := nextSeq(b)
				if err != nil {
					return err
				}
				// rawdb.Records checked them; no index entries.
				for _, rec := range pending {
					k := boltKey(rec.Key)
					if b.keys.Get(k) != nil {
						return rawdb.Twice(rec.Key)
					}
					if err := putNew(b, k, seq, rec.Key, rec.Data, rec.Values); err != nil {
						return err
					}
					seq++
				}
				if err := putSeq(b, seq); err != nil {
					return err
				}
				if !done {
					return nil
				}
				return putRV(b, recs.ResourceVersion)
			})
		})
		if err != nil {
			return err
		}
		pending = pending[:0]
	}
	// A transaction of its own: bbolt's MoveBucket moves a bucket as last
	// committed, losing changes of the same transaction (v1.5.0).
	return guard(func() error {
		return f.update(func(tx *bbolt.Tx) error {
			ib := tx.Bucket(bucketImport)
			if ib == nil || ib.Bucket(name) == nil {
				return fmt.Errorf("staged store %q vanished: %w", name, store.ErrCorrupt)
			}
			root, err := createRoot(tx)
			if err != nil {
				return err
			}
			if err := dropBucket(root, name); err != nil {
				return err
			}
			return tx.MoveBucket(name, ib, root)
		})
	})
}

// compactTxSize bounds the bytes Compact copies per transaction.
const compactTxSize = 64 << 20

// Compact rewrites the bbolt file at path without its free pages, as
// `bbolt compact` does, and replaces it atomically: the copy, created anew
// at path+".compact.part", given the original's owner and mode and
// fsynced, is renamed over path while the original is locked, and the
// directory fsynced. It
// refuses a path other users could tamper with (driver.CheckPath; run by
// root, as the file owner's), a file open in this process (store.ErrInUse)
// or locked by another (store.ErrLocked, after lockTimeout). It returns the
// sizes before and after. An open meanwhile waits, then opens the copy.
func Compact(ctx context.Context, path string, lockTimeout time.Duration) (before, after int64, err error) {
	fail := func(err error) (int64, int64, error) {
		return 0, 0, fmt.Errorf("store: compact %s: %w", path, err)
	}
	abs, err := filepath.Abs(path) // cleaned
	if err != nil {
		return fail(err)
	}
	path = abs
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fail(fmt.Errorf("%w: %w", store.ErrNotFound, err))
		}
		return fail(err)
	}
	uid, _, owned := fileOwner(fi)
	check := driver.CheckPath
	if owned && os.Geteuid() == 0 && uid != 0 {
		// root acts for the owner: the path must be safe for that user.
		check = func(path string, dir bool) error { return driver.CheckPathFor(path, dir, uid) }
	}
	if err := check(path, false); err != nil {
		return fail(err)
	}
	path = canonical(path)
	ran, err := files.Unless(path, func() (err error) {
		before, after, err = compactFile(ctx, path, fi, lockTimeout)
		return err
	})
	if !ran {
		return fail(fmt.Errorf("the file is open in this process: %w (close its stores first)", store.ErrInUse))
	}
	return before, after, err
}

// compactFile is Compact's work on the file at path, which this process
// does not have open; fi is what Compact checked.
func compactFile(ctx context.Context, path string, fi fs.FileInfo, lockTimeout time.Duration) (before, after int64, err error) {
	fail := func(err error) (int64, int64, error) {
		return 0, 0, fmt.Errorf("store: compact %s: %w", path, err)
	}
	o, err := (&store.Options{LockTimeout: lockTimeout}).WithDefaults()
	if err != nil {
		return fail(err)
	}
	src, _, err := openDB(ctx, path, o, false)
	if err != nil {
		var le *lockedError
		if errors.As(err, &le) {
			// The open's advice (lock_timeout=) is for URLs.
			return fail(fmt.Errorf("another process holds the file (waited %v; wait longer with the command's --lock-timeout flag, or Compact's lockTimeout): %w", le.waited, store.ErrLocked))
		}
		return fail(err)
	}
	defer src.Close()
	// The checks were of the file found then: refuse one put in its place
	// before the open locked it.
	if now, err := os.Lstat(path); err != nil || !os.SameFile(fi, now) {
		return fail(fmt.Errorf("the file was replaced while compact opened it; run compact again: %w", store.ErrLocked))
	}
	// A file that lost its stores bucket is refused, not copied.
	err = guard(func() error {
		return src.View(func(tx *bbolt.Tx) error {
			_, err := rootBucket(tx)
			return err
		})
	})
	if err != nil {
		return fail(withHint(err))
	}
	part := path + ".compact.part"
	// What a crashed compact left (this one holds the lock); O_EXCL below
	// refuses what another user puts there meanwhile (a sticky directory).
	if err := os.Remove(part); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(fmt.Errorf("remove the copy of an earlier compact: %w", err))
	}
	var partFile *os.File
	dst, err := bbolt.Open(part, fi.Mode().Perm(), &bbolt.Options{
		PageSize: src.Info().PageSize, FreelistType: bbolt.FreelistMapType, NoSync: true,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag|os.O_CREATE|os.O_EXCL, perm)
			partFile = f
			return f, err
		},
	})
	if err != nil {
		return fail(fmt.Errorf("create the copy %s: %w", part, err))
	}
	renamed := false
	defer func() {
		if !renamed {
			dst.Close() // a no-op once closed
			os.Remove(part)
		}
	}()
	if err := keepOwner(partFile, fi); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if err := guard(func() error { return bbolt.Compact(dst, src, compactTxSize) }); err != nil {
		return fail(err)
	}
	if err := dst.Sync(); err != nil {
		return fail(fmt.Errorf("fsync: %w", err))
	}
	if err := dst.Close(); err != nil {
		return fail(err)
	}
	pi, err := os.Stat(part)
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(part, path); err != nil {
		return fail(err)
	}
	renamed = true
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fail(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fail(fmt.Errorf("fsync directory: %w", err))
	}
	return fi.Size(), pi.Size(), nil
}

// keepOwner gives f, the compacted copy of orig, orig's mode and owner (a
// copy root made would lock the controller out), or fails, before anything
// is replaced.
func keepOwner(f *os.File, orig fs.FileInfo) error {
	// bbolt created it with the mode less the umask.
	if err := f.Chmod(orig.Mode().Perm()); err != nil {
		return fmt.Errorf("give the copy the file's mode %v: %w", orig.Mode().Perm(), err)
	}
	uid, gid, ok := fileOwner(orig)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat the copy: %w", err)
	}
	if u, g, _ := fileOwner(fi); u == uid && g == gid {
		return nil
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("give the copy the file's owner %d:%d (run compact as that user, or as root): %w", uid, gid, err)
	}
	return nil
}
