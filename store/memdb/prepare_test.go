package memdb_test

import (
	"errors"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/store"
)

// TestPrepareBatchFindsWhatCommitRejects checks that a memdb store is a
// store.BatchPreparer whose PrepareBatch fails, changing nothing, on what
// Commit would reject, the codec's refusals included: an informer finds
// the rejected operations of a batch that way, one at a time, and commits
// the rest whole (a relist stays atomic). Without it, a batch with an
// object the codec refuses was committed operation by operation.
func TestPrepareBatchFindsWhatCommitRejects(t *testing.T) {
	s := openFile(t, filepath.Join(t.TempDir(), "cache.snap"), "pods")
	bp, ok := s.(store.BatchPreparer)
	if !ok {
		t.Fatalf("%T is not a store.BatchPreparer", s)
	}
	good := newPod("ns", "a", "1", "app=web")
	// The store's codec encodes Pods; a ConfigMap it refuses.
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: "2"}}
	if _, err := bp.PrepareBatch(store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: good}, {Type: store.OpPut, Object: bad}}, ResourceVersion: "2"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("PrepareBatch with an object the codec refuses: %v, want ErrInvalid", err)
	}
	if n := len(s.ListKeys()); n != 0 || s.ResourceVersion() != "" {
		t.Fatalf("PrepareBatch changed the store: %d keys, resume point %q", n, s.ResourceVersion())
	}
	p, err := bp.PrepareBatch(store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: good}}, ResourceVersion: "2"})
	if err != nil {
		t.Fatalf("PrepareBatch: %v", err)
	}
	if err := p.Commit(t.Context()); err != nil {
		t.Fatalf("prepared Commit: %v", err)
	}
	if got := contents(t, s); len(got) != 1 || got["ns/a"] != "1 app=web" || s.ResourceVersion() != "2" {
		t.Errorf("after the prepared commit: %v at %q, want ns/a at 2", got, s.ResourceVersion())
	}
}
