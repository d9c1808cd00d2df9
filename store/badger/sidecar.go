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

// The stores file. A MANIFEST cut short reads to badger as a torn last
// change: it opens an empty database and deletes the tables no longer
// listed, which nothing inside badger tells from a new database. So a file
// beside badger's, written atomically, names the stores the database holds:
//
//	storesMagic uvarint(count) lp(name)... CRC32C (of the file name and the rest)
//
// A store is added once its meta record is durable and removed before its
// Drop marks it dropped: the file never names a store that is not there.
// Every open checks it: a store it names that badger lacks is lost, and the
// database store.ErrCorrupt. A missing file is written from what badger
// holds; a damaged one too, unless badger holds no store (new and lost
// cannot be told apart: store.ErrCorrupt).
const (
	storesFile    = "INFORMERDB-STORES"
	storesFileTmp = storesFile + ".tmp"
)

// storesMagic starts the stores file; its last byte is the version.
var storesMagic = []byte("idbstores\x01")

// storesList is the stores file of one open database.
type storesList struct {
	dir string
	// mu serializes changes of the file; it guards names.
	mu    sync.Mutex
	names map[string]bool
}

func encodeStores(names map[string]bool) []byte {
	b := append([]byte(nil), storesMagic...)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range slices.Sorted(maps.Keys(names)) {
		b = appendLP(b, n)
	}
	return recsum.Seal([]byte(storesFile), b)
}

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

// readStoresFile reads the stores file of dir, if found.
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

// writeStoresFile replaces the stores file of dir atomically (temporary
// file, fsync, rename, fsync of the directory).
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

// storeNames returns the names of the stores db holds: present, those with
// a meta record, and live, those not dropped (or unreadable: opening the
// store reports it).
func storeNames(db *badger.DB) (present, live map[string]bool, err error) {
	present, live = map[string]bool{}, map[string]bool{}
	err = db.View(func(txn *badger.Txn) error {
		return eachStoreName(txn, func(name string) error {
			m, _, found, err := readMeta(txn, newKeys(name, 0).meta())
			if !found {
				return err
			}
			present[name] = true
			if err != nil || !m.Dropped {
				live[name] = true
			}
			return nil
		})
	})
	return present, live, err
}

// openStoresList checks the stores file of dir against db, just opened, and
// returns it up to date. errDamaged means stores were lost, or may be.
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

// set rewrites the stores file with name in it (once its meta record is
// durable) or not (before its Drop marks it dropped), unless it is so.
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
