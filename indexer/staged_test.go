package indexer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/store"
)

// recordingPersister records, per Commit, what each change says it
// replaces. It is not self-diffing: Base must tell it, and say so.
type recordingPersister struct {
	countingPersister
	seen [][]replaced
}

type replaced struct {
	Key     string
	Existed bool
	Old     [][]string
}

func (p *recordingPersister) Commit(_ context.Context, changes []Change, diffed bool, _ *IndexSet, _ string, _ bool) error {
	if !diffed {
		return errors.New("commit without what the changes replace")
	}
	var r []replaced
	for _, c := range changes {
		r = append(r, replaced{Key: c.Key, Existed: c.Existed, Old: c.OldValues})
	}
	p.seen = append(p.seen, r)
	return nil
}

// stageOps prepares ops and persists them as a staged commit of b, and
// returns its apply.
func stageOps(t *testing.T, b *Base, ops []store.Op) func() {
	t.Helper()
	pb, err := b.PrepareBatch(store.Batch{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	apply, err := pb.(store.StagedBatch).Persist(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return apply
}

// TestStagedChangesReplaceUnapplied checks what the changes of a staged
// commit replace when the staged commit before it is persisted and not yet
// applied: its state, not the cache's older one (a persister diffing index
// values against a stale state would skip writes it needs). It also checks
// that once everything is applied, the cache is read again.
func TestStagedChangesReplaceUnapplied(t *testing.T) {
	p := &recordingPersister{}
	b := newNamespacedBase(t, p)
	cm := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	if err := b.Add(cm("east", "a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(cm("east", "b")); err != nil {
		t.Fatal(err)
	}
	stage := func(ops ...store.Op) func() {
		t.Helper()
		return stageOps(t, b, ops)
	}
	east, west := [][]string{{"east"}}, [][]string{{"west"}}
	// Staged 1 deletes east/a and creates west/c, and is not applied.
	apply1 := stage(store.Op{Type: store.OpDelete, Key: "east/a"}, store.Op{Type: store.OpPut, Object: cm("west", "c")})
	// Staged 2 re-creates east/a, updates west/c, updates east/b: what it
	// replaces is staged 1's state, and east/b's from the cache.
	apply2 := stage(store.Op{Type: store.OpPut, Object: cm("east", "a")}, store.Op{Type: store.OpPut, Object: cm("east", "b")}, store.Op{Type: store.OpPut, Object: cm("west", "c")})
	apply1()
	// Staged 3, after 1 is applied and 2 is not: west/c as 2 left it.
	apply3 := stage(store.Op{Type: store.OpDelete, Key: "west/c"})
	apply2()
	apply3()
	// Everything applied: the cache again.
	if err := b.Delete(cm("east", "b")); err != nil {
		t.Fatal(err)
	}
	want := [][]replaced{
		{{Key: "east/a"}},
		{{Key: "east/b"}},
		{{Key: "east/a", Existed: true, Old: east}, {Key: "west/c"}},
		{{Key: "east/a"}, {Key: "east/b", Existed: true, Old: east}, {Key: "west/c", Existed: true, Old: west}},
		{{Key: "west/c", Existed: true, Old: west}},
		{{Key: "east/b", Existed: true, Old: east}},
	}
	if diff := cmp.Diff(want, p.seen); diff != "" {
		t.Errorf("what changes replace, per Persist (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"east/a"}, b.ListKeys()); diff != "" {
		t.Errorf("keys after every apply (-want +got):\n%s", diff)
	}
	if len(b.unapplied) != 0 {
		t.Errorf("%d keys still recorded as unapplied after every apply", len(b.unapplied))
	}
}

// TestChangesStartClean: Base reuses the slice of changes from one batch
// to the next; a relist, which looks nothing up, must not see what the
// batch before it replaced.
func TestChangesStartClean(t *testing.T) {
	p := &recordingPersister{}
	b := newNamespacedBase(t, p)
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: name}}
	}
	for _, name := range []string{"a", "b"} {
		if err := b.Add(cm(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: cm("a")}, {Type: store.OpPut, Object: cm("b")}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Replace([]interface{}{cm("c"), cm("d")}, "9"); err != nil {
		t.Fatal(err)
	}
	want := [][]replaced{
		{{Key: "east/a"}},
		{{Key: "east/b"}},
		{{Key: "east/a", Existed: true, Old: [][]string{{"east"}}}, {Key: "east/b", Existed: true, Old: [][]string{{"east"}}}},
		{{Key: "east/c"}, {Key: "east/d"}},
	}
	if diff := cmp.Diff(want, p.seen); diff != "" {
		t.Errorf("what changes replace, per Persist (-want +got):\n%s", diff)
	}
}

// TestStagedRelistMapDropped: the map of unapplied states grows to the
// largest staged commit, and Go maps keep their largest size. Once a
// commit larger than a group commit's (a relist's) is applied, the map is
// dropped; one of group commits' size is kept for the next.
func TestStagedRelistMapDropped(t *testing.T) {
	b := newNamespacedBase(t, &recordingPersister{})
	stage := func(n int, prefix string) func() {
		t.Helper()
		ops := make([]store.Op, n)
		for i := range ops {
			ops[i] = store.Op{Type: store.OpPut, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s%d", prefix, i)}}}
		}
		return stageOps(t, b, ops)
	}
	stage(100, "small")()
	if b.unapplied == nil {
		t.Fatal("the map of a group commit's size was dropped")
	}
	big := stage(maxChangeBuf+1, "big")
	small := stage(10, "after") // staged while the relist is unapplied
	big()
	if b.unapplied == nil || len(b.unapplied) != 10 {
		t.Fatalf("with a commit still unapplied: map %v with %d keys, want its 10", b.unapplied != nil, len(b.unapplied))
	}
	small()
	if b.unapplied != nil {
		t.Errorf("after a relist's staged commit drained: the map (%d keys) is kept, want it dropped", len(b.unapplied))
	}
	if got := b.Len(); got != 100+maxChangeBuf+1+10 {
		t.Errorf("Len = %d after every apply, want %d", got, 100+maxChangeBuf+1+10)
	}
}
