package badger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/store/internal/recsum"
	"github.com/informerdb/informerdb/store/internal/varint"
)

// The stores file. Badger keeps what its tables hold only in its MANIFEST,
// and a MANIFEST cut short (at any length past its magic) reads as a crash
// torn in its last change: badger opens it as a new, empty database and
// deletes the tables it no longer lists. Nothing inside the LSM tree can
// tell that from a database that never held anything, so a small file
// beside badger's, written atomically (a temporary file, fsync, rename,
// fsync of the directory), names the stores the database holds:
//
//	storesMagic uvarint(count) lp(name)... CRC32C
//
// (the CRC32C of the file's name and what precedes it, as recsum frames
// records). It is written when the set changes, which is rare: a store is
// added once it is created (its meta record durable), and removed before its
// Drop marks it dropped, so that a crash between the two steps leaves a
// store the file does not name, which the next open adds, never a name
// without a store. Every open checks it against badger's meta records: a
// store the file names and badger lacks is lost, and the database is
// store.ErrCorrupt. A directory without the file is a new database, or one
// an older build wrote: the file is written from what badger holds. A
// damaged file is rewritten from badger's stores if there are any, and
// store.ErrCorrupt if there are none (new and lost cannot be told apart).
const (
	storesFile    = "INFORMERDB-STORES"
	storesFileTmp = storesFile + ".tmp"
)

// storesMagic starts the stores file (its format version is the last byte).
var storesMagic = []byte("idbstores\x01")

// storesList is the stores file of one open database.
type storesList struct {
	dir string
	// mu serializes changes of the file; it guards names.
	mu    sync.Mutex
	names map[string]bool
}

// encodeStores returns the content of a stores file naming names.
func encodeStores(names map[string]bool) []byte {
	b := append([]byte(nil), storesMagic...)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range slices.Sorted(maps.Keys(names)) {
		b = appendLP(b, n)
	}
	return recsum.Seal([]byte(storesFile), b)
}

// decodeStores parses the content of a stores file.
func decodeStores(data []byte) (map[string]bool, error) {
	b, ok := recsum.Open([]byte(storesFile), data)
	if !ok {
		return nil, fmt.Errorf("checksum mismatch (%d bytes)", len(data))
	}
	if !bytes.HasPrefix(b, storesMagic) {
		return nil, errors.New("bad magic")
	}
	b = b[len(storesMagic):]
	n, w := varint.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, errBadRecord
	}
	b = b[w:]
	names := make(map[string]bool, n)
	for range n {
		var name string
		var err error
		name, b, err = readLP(b)
		if err != nil {
			return nil, err
		}
		names[name] = true
	}
	if len(b) != 0 {
		return nil, errBadRecord
	}
	return names, nil
}

// readStoresFile reads the stores file of dir: found is false when there
// is none; a file that cannot be parsed is an error wrapping errBadRecord
// or naming the checksum mismatch.
func readStoresFile(dir string) (names map[string]bool, found bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, storesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	names, err = decodeStores(data)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", storesFile, err)
	}
	return names, true, nil
}

// writeStoresFile replaces the stores file of dir, atomically: a crash
// leaves the old file or the new one (and maybe the temporary file, which
// the next write replaces).
func writeStoresFile(dir string, names map[string]bool) error {
	tmp := filepath.Join(dir, storesFileTmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", storesFile, err)
	}
	_, err = f.Write(encodeStores(names))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, storesFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", storesFile, err)
	}
	return nil
}

// storeNames returns the names of the stores db holds: present, those
// with a meta record, and live, those of them not dropped (a dropped
// store's name left the stores file before its marker was written, see
// dropStore). A meta record that cannot be read counts as live: opening
// the store reports it. One seek per store: the keys of a store share its
// prefix.
func storeNames(db *badger.DB) (present, live map[string]bool, err error) {
	present, live = map[string]bool{}, map[string]bool{}
	err = db.View(func(txn *badger.Txn) error {
		return eachStoreName(txn, func(name string) error {
			mk := newKeys(name, 0).meta()
			item, err := txn.Get(mk)
			switch {
			case err == nil:
				present[name] = true
				raw, err := item.ValueCopy(nil)
				if err != nil {
					live[name] = true
					break
				}
				if m, _, err := decodeMeta(mk, raw); err != nil || !m.Dropped {
					live[name] = true
				}
			case !errors.Is(err, badger.ErrKeyNotFound):
				return err
			}
			return nil
		})
	})
	return present, live, err
}

// openStoresList checks the stores file of dir against db, just opened
// (see storesFile), and returns it, brought up to date. An error wrapping
// errDamaged means the database lost stores, or cannot tell.
func openStoresList(dir string, db *badger.DB) (*storesList, error) {
	present, have, err := storeNames(db)
	if err != nil {
		return nil, fmt.Errorf("%w: list the stores: %w", errDamaged, err)
	}
	listed, found, err := readStoresFile(dir)
	switch {
	case err != nil && errors.Is(err, fs.ErrPermission):
		return nil, err
	case err != nil && len(present) == 0:
		return nil, fmt.Errorf("%w: %w, and badger holds no store: the database may have lost them all", errDamaged, err)
	case err != nil:
		klog.Background().Info("Rewriting a damaged badger stores file from the stores the database holds", "dir", dir, "err", err, "stores", len(have))
	case found:
		var lost []string
		for n := range listed {
			if !present[n] {
				lost = append(lost, n)
			}
		}
		if len(lost) > 0 {
			slices.Sort(lost)
			return nil, fmt.Errorf("%w: %s names %d stores that badger no longer holds (%s): its MANIFEST or tables are damaged",
				errDamaged, storesFile, len(lost), quoteFirst(lost, 3))
		}
	}
	l := &storesList{dir: dir, names: have}
	if !found || err != nil || !maps.Equal(listed, have) {
		// A new database, one of an older build, a damaged file, or
		// stores created by a process that crashed before naming them.
		if err := writeStoresFile(dir, have); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// quoteFirst quotes the first n of names, and says how many more there are.
func quoteFirst(names []string, n int) string {
	q := make([]string, 0, n)
	for _, s := range names[:min(n, len(names))] {
		q = append(q, fmt.Sprintf("%q", s))
	}
	if len(names) > n {
		q = append(q, fmt.Sprintf("and %d more", len(names)-n))
	}
	return strings.Join(q, ", ")
}

// add names the store name in the stores file, once its meta record is
// durable.
func (l *storesList) add(name string) error { return l.set(name, true) }

// remove takes the store name out of the stores file, before its Drop
// marks it dropped.
func (l *storesList) remove(name string) error { return l.set(name, false) }

// set rewrites the stores file with name in it or not, unless it is so.
func (l *storesList) set(name string, in bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.names[name] == in {
		return nil
	}
	names := maps.Clone(l.names)
	if in {
		names[name] = true
	} else {
		delete(names, name)
	}
	if err := writeStoresFile(l.dir, names); err != nil {
		return err
	}
	l.names = names
	return nil
}
