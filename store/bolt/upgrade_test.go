package bolt

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

// TestOldFormatReopenedWithChanges opens a store of format version 2 or 3
// (unframed records), in each mode, with what else makes an open rewrite
// records: another index set (its values rebuilt), another scope (emptied),
// both, a key function or an index function that computes something else
// under the same name (found by the open's checks, which run before the
// upgrade). Every record must be framed exactly once, and a version 2
// store keep the index entries it needs: the store, reopened in each mode,
// and the raw driver's Export and IndexEntries must read back exactly the
// objects, keys, index values and resume point it should hold.
func TestOldFormatReopenedWithChanges(t *testing.T) {
	for _, version := range []int{formatSeqEntries, formatUnsealed} {
		for _, ch := range storetest.Reopens() {
			for _, cacheSize := range []int{0, 3} {
				t.Run(fmt.Sprintf("v%d/%s/cache=%d", version, ch.Name, cacheSize), func(t *testing.T) {
					path := filepath.Join(t.TempDir(), "pods.db")
					u := "bolt://" + path
					pods := versionedPods()
					writeOldStore(t, path, version, "cluster-a", pods)

					o := upgradeOptions(t, cacheSize, "cluster-a", ch.Change)
					s, err := store.Open(t.Context(), u, &o)
					if err != nil {
						t.Fatalf("open the version %d store: %v", version, err)
					}
					rv := storetest.Reopened(t, s, o, ch.Reset, pods, "42", "43", podSummary)
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					storetest.RawHolds(t, Raw(), &url.URL{Scheme: Scheme, Path: path}, FormatVersion, o, pods, rv, podSummary, IndexEntries)

					// Reopened, in this mode and then in the other,
					// which builds or drops the index entries from
					// the key records.
					for _, size := range []int{cacheSize, 3 - cacheSize} {
						ro := o
						ro.CacheSize = size
						s, err := store.Open(t.Context(), u, &ro)
						if err != nil {
							t.Fatalf("reopen (cache=%d): %v", size, err)
						}
						if got := s.Info().Reset; got != "" {
							t.Errorf("reopen (cache=%d) emptied the store: %s", size, got)
						}
						storetest.Holds(t, fmt.Sprintf("reopened (cache=%d)", size), s, ro, pods, rv, podSummary)
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
						storetest.RawHolds(t, Raw(), &url.URL{Scheme: Scheme, Path: path}, FormatVersion, ro, pods, rv, podSummary, IndexEntries)
					}
				})
			}
		}
	}
}

// writeOldStore writes pods with the resume point 42 to the store "pods" of
// the file at path, with scope, and rewrites it as format version version
// (2 or 3) stored it. The bounded mode writes it: it keeps index entries,
// as format version 2 always did.
func writeOldStore(t *testing.T, path string, version int, scope string, pods []*corev1.Pod) {
	t.Helper()
	o := upgradeOptions(t, 3, scope, nil)
	s, err := store.Open(t.Context(), "bolt://"+path, &o)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Put(t, s, pods, "42")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if version == formatSeqEntries {
		setFormat2(t, path)
	} else {
		setFormat3(t, path)
	}
}

// versionedPods are five Pods in two namespaces and three apps, each with
// its own resourceVersion, so that a record read under another key shows.
func versionedPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range 5 {
		pods = append(pods, pod(fmt.Sprintf("ns%d", i%2), fmt.Sprint("p", i), fmt.Sprint("app", i%3), fmt.Sprint(i+1)))
	}
	return pods
}

// upgradeOptions are entriesOptions with scope, changed by change (if any);
// the key function keeps its name, as a changed function compiled under the
// same name would.
func upgradeOptions(t *testing.T, cacheSize int, scope string, change func(o *store.Options)) store.Options {
	t.Helper()
	o := entriesOptions(t, cacheSize)
	o.Scope = scope
	if change != nil {
		change(&o)
	}
	return o
}

// podSummary is what a test compares of a Pod: the fields pod sets.
func podSummary(obj interface{}) string {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Sprintf("not a Pod: %T", obj)
	}
	return fmt.Sprintf("%s/%s app=%s rv=%s", p.Namespace, p.Name, p.Labels["app"], p.ResourceVersion)
}

// TestOldFormatUpgradeCrash opens a store of format version 2 or 3 whose
// app index function computes something else under the same name, in each
// mode: the open stores the new values (the decoded mode finds them as it
// loads, the bounded mode in its sample), then upgrades the store, in two
// write transactions. The file as each commit of the open left it, which a
// crash there would leave, opened again in each mode, must hold exactly the
// objects and resume point it held, under the new function.
func TestOldFormatUpgradeCrash(t *testing.T) {
	otherApp := func(obj interface{}) ([]string, error) {
		return []string{"v2-" + obj.(*corev1.Pod).Labels["app"]}, nil
	}
	change := func(o *store.Options) { o.Indexers["app"] = otherApp }
	for _, version := range []int{formatSeqEntries, formatUnsealed} {
		for _, cacheSize := range []int{0, 3} {
			t.Run(fmt.Sprintf("v%d/cache=%d", version, cacheSize), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "pods.db")
				pods := versionedPods()
				writeOldStore(t, path, version, "", pods)

				// The file as each commit of the open leaves it.
				var states []string
				t.Cleanup(func() { testHookCommitErr = nil })
				testHookCommitErr = func() error {
					data, err := os.ReadFile(path)
					if err != nil {
						return err
					}
					state := filepath.Join(dir, fmt.Sprintf("state%d.db", len(states)))
					states = append(states, state)
					return os.WriteFile(state, data, 0o600)
				}
				o := upgradeOptions(t, cacheSize, "", change)
				s, err := store.Open(t.Context(), "bolt://"+path, &o)
				testHookCommitErr = nil
				if err != nil {
					t.Fatalf("open the version %d store: %v", version, err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if len(states) == 0 {
					t.Fatal("the open committed nothing; want the upgrade")
				}
				for i, state := range states {
					for _, size := range []int{cacheSize, 3 - cacheSize} {
						ro := o
						ro.CacheSize = size
						s, err := store.Open(t.Context(), "bolt://"+state, &ro)
						if err != nil {
							t.Errorf("open the file after commit %d of %d (cache=%d): %v", i+1, len(states), size, err)
							continue
						}
						storetest.Holds(t, fmt.Sprintf("after commit %d of %d (cache=%d)", i+1, len(states), size), s, ro, pods, "42", podSummary)
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
					}
				}
			})
		}
	}
}
