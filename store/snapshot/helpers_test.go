package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/badger"
	"github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/store/snapshot"

	// The tests read and write every backend's databases.
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

func TestMain(m *testing.M) {
	// A test double the handler tests serve (see failingDriver).
	store.Register("failing", failingDriver{})
	if arg := os.Getenv("SNAPSHOT_TEST_CRASH"); arg != "" {
		crashChild(arg)
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		goleak.IgnoreAnyFunction("github.com/dgraph-io/ristretto/v2/z.(*AllocatorPool).freeupAllocators"),
		goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}

// entries are the index-entry readers of the backends that keep entries.
var entries = map[string]snapshot.IndexEntries{bolt.Scheme: bolt.IndexEntries, badger.Scheme: badger.IndexEntries}

const podsName = "v1/pods"

func podCodec(t testing.TB) store.Codec {
	t.Helper()
	c, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// byNode indexes Pods by node; Pods without a node have no value.
func byNode(obj interface{}) ([]string, error) {
	p := obj.(*corev1.Pod)
	if p.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{p.Spec.NodeName}, nil
}

func podOptions(t testing.TB) *store.Options {
	return &store.Options{
		Name:  podsName,
		Codec: podCodec(t),
		Indexers: cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
			"node":               byNode,
		},
		Scope:      "cluster-a/pods",
		Durability: store.DurabilityNoSync,
	}
}

// pod returns Pod i of a test set: padded to about size bytes of
// annotations, spread over 7 namespaces and 5 nodes (every 11th without).
func pod(i, size int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       fmt.Sprintf("ns-%d", i%7),
		Name:            fmt.Sprintf("pod-%05d", i),
		ResourceVersion: fmt.Sprint(100 + i),
		Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%13)},
	}}
	if i%11 != 0 {
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%5)
	}
	if size > 0 {
		p.Annotations = map[string]string{"pad": strings.Repeat("x", size)}
	}
	return p
}

// fill opens the store podsName at rawURL, replaces its contents by n Pods
// with resume point rv, and closes it.
func fill(t testing.TB, rawURL string, n, size int, rv string) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, rawURL, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	list := make([]interface{}, n)
	for i := range list {
		list[i] = pod(i, size)
	}
	if err := s.Replace(list, rv); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func boltURL(t testing.TB) string   { return "bolt://" + filepath.Join(t.TempDir(), "cache.db") }
func badgerURL(t testing.TB) string { return "badger://" + filepath.Join(t.TempDir(), "db") }
func memoryURL(t testing.TB) string { return "memory://" + filepath.Join(t.TempDir(), "cache.snap") }
func memdbURL(t testing.TB) string  { return "memdb://" + filepath.Join(t.TempDir(), "cache.snap") }

func snapPath(t testing.TB) string { return filepath.Join(t.TempDir(), "snap.idb") }

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
