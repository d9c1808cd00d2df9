package badger

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"
	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

// oldFormats are the stores of earlier format versions an open upgrades:
// version 1 (which always kept its index entries) and version 2 written by
// either mode (with or without index entries), all without value frames.
var oldFormats = []struct {
	name    string
	version int
	bounded bool // the mode that wrote the store
}{
	{"v1", formatV1, true},
	{"v2-bounded", formatUnsealed, true},
	{"v2-default", formatUnsealed, false},
	// The same changes without an upgrade.
	{"v3", FormatVersion, true},
}

// TestOldFormatReopenedWithChanges opens a store of format version 1 or 2
// (no value frames), in each mode, with each change of storetest.Reopens.
// The open copies the store into a framed generation before it reads an object, so every
// value must be framed exactly once and every change apply to the copy:
// the store, reopened in each mode, and the raw driver's Export and
// IndexEntries must read back exactly the objects, keys, index values and
// resume point it should hold, with index entries exactly where the mode
// keeps them.
func TestOldFormatReopenedWithChanges(t *testing.T) {
	for _, from := range oldFormats {
		for _, ch := range storetest.Reopens() {
			for _, cacheSize := range []int{0, 3} {
				t.Run(fmt.Sprintf("%s/%s/cache=%d", from.name, ch.Name, cacheSize), func(t *testing.T) {
					dir := t.TempDir()
					pods := upgradePods()
					writeOldStore(t, dir, openPublic, from.version, from.bounded, pods)

					o := upgradeOptions(t, cacheSize, ch.Change)
					s, err := openPublic(t, dir, o)
					if err != nil {
						t.Fatalf("open the version %d store: %v", from.version, err)
					}
					if got := s.Info().FormatVersion; got != FormatVersion {
						t.Errorf("Info().FormatVersion = %d, want %d", got, FormatVersion)
					}
					rv := storetest.Reopened(t, s, o, ch.Reset, pods, "42", "43", podSummary)
					mustOK(t, "Close", s.Close())
					checkUpgradedRaw(t, dir, o, pods, rv)

					// Reopened, in this mode and then in the other,
					// which builds or drops the index entries.
					for _, size := range []int{cacheSize, 3 - cacheSize} {
						ro := o
						ro.CacheSize = size
						s, err := openPublic(t, dir, ro)
						if err != nil {
							t.Fatalf("reopen (cache=%d): %v", size, err)
						}
						if got := s.Info().Reset; got != "" {
							t.Errorf("reopen (cache=%d) emptied the store: %s", size, got)
						}
						storetest.Holds(t, fmt.Sprintf("reopened (cache=%d)", size), s, ro, pods, rv, podSummary)
						mustOK(t, "Close", s.Close())
						checkUpgradedRaw(t, dir, ro, pods, rv)
					}
				})
			}
		}
	}
}

// TestOldFormatUpgradeCrash stops an open of a store of format version 1
// or 2 with each change of storetest.Reopens, in each mode, after each of its commits (a
// transaction or a write batch's flush, the deletion of the old generation
// in the background too), as a crash there would: the write that commit
// made stays, nothing after it is written. The store, opened again with
// the same options in each mode, must hold exactly the objects and resume
// point it held (or nothing, for a change that empties it), under the new
// functions. Its databases are small (smallConfig): each state is a copy.
func TestOldFormatUpgradeCrash(t *testing.T) {
	crash := errors.New("simulated crash")
	for _, from := range oldFormats {
		if from.version == FormatVersion {
			continue
		}
		for _, ch := range storetest.Reopens() {
			for _, cacheSize := range []int{0, 3} {
				t.Run(fmt.Sprintf("%s/%s/cache=%d", from.name, ch.Name, cacheSize), func(t *testing.T) {
					t.Cleanup(func() { testHookCommitted, testHookFlushed = nil, nil })
					fixture := t.TempDir()
					pods := upgradePods()
					writeOldStore(t, fixture, openSmall, from.version, from.bounded, pods)
					o := upgradeOptions(t, cacheSize, ch.Change)
					want, rv := pods, "42"
					if ch.Reset {
						want, rv = nil, ""
					}

					stopped := 0
					for stopAt := int64(1); ; stopAt++ {
						if stopAt > 100 {
							t.Fatal("the open committed more than 100 times")
						}
						dir := filepath.Join(t.TempDir(), "db")
						copyDir(t, fixture, dir)
						// Counted by the open and the deletion of
						// the old generation in the background.
						var commits atomic.Int64
						stop := func(*sharedDB) error {
							if commits.Add(1) == stopAt {
								return crash
							}
							return nil
						}
						testHookCommitted, testHookFlushed = stop, stop
						s, err := openSmall(t, dir, o)
						if err == nil {
							// Closing waits for the deletion of the
							// old generation.
							mustOK(t, "Close", s.Close())
						}
						testHookCommitted, testHookFlushed = nil, nil
						if commits.Load() < stopAt {
							// Every state the open passes through
							// was tried.
							mustOK(t, "open", err)
							break
						}
						// A failed deletion in the background is
						// only logged: the open may succeed.
						if err != nil && !errors.Is(err, crash) {
							t.Fatalf("open stopped after commit %d: %v, want the simulated crash", stopAt, err)
						}
						stopped++
						for _, size := range []int{cacheSize, 3 - cacheSize} {
							when := fmt.Sprintf("after commit %d (cache=%d)", stopAt, size)
							ro := o
							ro.CacheSize = size
							s, err := openSmall(t, dir, ro)
							if err != nil {
								t.Fatalf("open %s: %v", when, err)
							}
							if got := s.Info().Reset; got != "" && !ch.Reset {
								t.Errorf("open %s emptied the store: %s", when, got)
							}
							storetest.Holds(t, when, s, ro, want, rv, podSummary)
							mustOK(t, "Close", s.Close())
							checkUpgradedRaw(t, dir, ro, want, rv)
						}
					}
					if stopped == 0 {
						t.Fatal("the open committed nothing; want the upgrade")
					}
				})
			}
		}
	}
}

// upgradePods are six Pods in two namespaces and three apps, each with its
// own resourceVersion, so that a record read under another key shows; one
// has a key longer than maxInline, kept hashed in badger keys.
func upgradePods() []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range 6 {
		p := newPod(i, fmt.Sprint(i+1), fmt.Sprint("app", i%3))
		p.Namespace = fmt.Sprint("ns", i%2)
		if i == 5 {
			p.Name = strings.Repeat("n", maxInline+10)
		}
		pods = append(pods, p)
	}
	return pods
}

// upgradeOptions are the options of the store "pods" with the Pod index
// functions, changed by change (if any); the key function keeps its name,
// as a changed function compiled under the same name would.
func upgradeOptions(t *testing.T, cacheSize int, change func(o *store.Options)) store.Options {
	t.Helper()
	o, err := (&store.Options{
		Name: "pods", Codec: podCodec(t), Indexers: podIndexers(), CacheSize: cacheSize,
		Scope: "cluster-a", Durability: store.DurabilityNoSync,
	}).WithDefaults()
	mustOK(t, "options", err)
	o.Indexers = maps.Clone(o.Indexers)
	if change != nil {
		change(&o)
	}
	return o
}

// openPublic opens the store of o in the database in dir as users do.
func openPublic(t *testing.T, dir string, o store.Options) (store.Store, error) {
	return store.Open(t.Context(), "badger://"+dir, &o)
}

// openSmall opens the store of o in the database in dir with smallConfig.
func openSmall(t *testing.T, dir string, o store.Options) (store.Store, error) {
	return open(t.Context(), dir, &o, smallConfig())
}

// writeOldStore writes pods with the resume point 42 to the store "pods"
// in dir (opened with openFn), in the bounded mode or not, and rewrites it
// as format version version stored it.
func writeOldStore(t *testing.T, dir string, openFn func(*testing.T, string, store.Options) (store.Store, error), version int, bounded bool, pods []*corev1.Pod) {
	t.Helper()
	o := upgradeOptions(t, map[bool]int{true: 3}[bounded], nil)
	s, err := openFn(t, dir, o)
	mustOK(t, "open", err)
	storetest.Put(t, s, pods, "42")
	mustOK(t, "Close", s.Close())
	if version < FormatVersion {
		setFormat(t, dir, version)
	}
	// What the open finds: a meta record of that version, unframed if
	// older than this one.
	err = withDB(t.Context(), "test read", rawURL(dir), "", false, func(sh *sharedDB) error {
		return sh.db.View(func(txn *badger.Txn) error {
			m, unsealed, _, err := readMeta(txn, newKeys("pods", 0).meta())
			if err == nil && (unsealed != (version < FormatVersion) || m.FormatVersion != version) {
				err = fmt.Errorf("format version %d, unframed %v; want %d", m.FormatVersion, unsealed, version)
			}
			return err
		})
	})
	mustOK(t, fmt.Sprintf("write a format %d store", version), err)
}

// podSummary is what a test compares of a Pod: the fields upgradePods sets.
func podSummary(obj interface{}) string {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Sprintf("not a Pod: %T", obj)
	}
	return fmt.Sprintf("%s/%.20s app=%s rv=%s", p.Namespace, p.Name, p.Labels["app"], p.ResourceVersion)
}

// checkUpgradedRaw checks the closed store "pods" in dir, last opened with
// o, holding exactly pods at the resume point rv: the raw driver's Export
// (records and their index values) and IndexEntries, and the invariant of
// metaRecord.Entries (checkRaw: entries exactly where o's mode keeps them).
func checkUpgradedRaw(t *testing.T, dir string, o store.Options, pods []*corev1.Pod, rv string) {
	t.Helper()
	storetest.RawHolds(t, Raw(), rawURL(dir), FormatVersion, o, pods, rv, podSummary, IndexEntries)
	checkRaw(t, dir, o.CacheSize > 0)
}

// copyDir copies the closed database in from to the new directory to.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o600)
	})
	mustOK(t, "copy the database", err)
}
