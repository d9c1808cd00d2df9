package indexer_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

func pod(ns, name string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if len(labels) > 0 {
		p.Labels = map[string]string{}
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			p.Labels[k] = v
		}
	}
	return p
}

func mustIndexSet(t *testing.T, ix cache.Indexers) *indexer.IndexSet {
	t.Helper()
	s, err := indexer.NewIndexSet(ix)
	if err != nil {
		t.Fatalf("NewIndexSet: %v", err)
	}
	return s
}

// failIndex fails for objects labelled fail, and panics for objects labelled
// panic.
func failIndex(obj interface{}) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil // lets objects of other types reach the codec
	}
	if _, ok := p.Labels["panic"]; ok {
		panic("index asked to panic")
	}
	if _, ok := p.Labels["fail"]; ok {
		return nil, errors.New("index asked to fail")
	}
	return []string{p.Labels["app"]}, nil
}

func newPreparer(t *testing.T, codec store.Codec) *indexer.Preparer {
	t.Helper()
	return &indexer.Preparer{
		KeyFunc: cache.DeletionHandlingMetaNamespaceKeyFunc,
		Indexes: mustIndexSet(t, cache.Indexers{"app": failIndex, "namespace": indexer.NamespaceIndexFunc}),
		Codec:   codec,
	}
}

func TestPrepareBadInput(t *testing.T) {
	codec := mustCodec(t, &corev1.Pod{})
	var nilPod *corev1.Pod
	for _, tc := range []struct {
		name string
		op   store.Op
		says string
	}{
		{"nil object", store.Op{Type: store.OpPut}, "nil object"},
		{"typed nil object", store.Op{Type: store.OpPut, Object: nilPod}, "nil object"},
		{"tombstone put", store.Op{Type: store.OpPut, Object: cache.DeletedFinalStateUnknown{Key: "a/b", Obj: pod("a", "b")}}, "tombstone"},
		{"delete without object or key", store.Op{Type: store.OpDelete}, "needs an object or a key"},
		{"unknown op type", store.Op{Type: 0, Object: pod("a", "b")}, "unknown op type"},
		{"key function error", store.Op{Type: store.OpPut, Object: "a string"}, "key function"},
		{"key function error on delete", store.Op{Type: store.OpDelete, Object: 42}, "key function"},
		{"index function error", store.Op{Type: store.OpPut, Object: pod("a", "b", "fail=1")}, "index asked to fail"},
		{"index function panic", store.Op{Type: store.OpPut, Object: pod("a", "b", "panic=1")}, "panicked"},
		{"codec cannot encode", store.Op{Type: store.OpPut, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}}, "encode"},
		{"empty key", store.Op{Type: store.OpPut, Object: pod("", "")}, "op 1 of 2 (put *v1.Pod): empty key"},
		{"empty key delete", store.Op{Type: store.OpDelete, Object: pod("", "")}, "op 1 of 2 (delete *v1.Pod): empty key"},
		{"empty key tombstone", store.Op{Type: store.OpDelete, Object: cache.DeletedFinalStateUnknown{Key: ""}}, "op 1 of 2 (delete cache.DeletedFinalStateUnknown): empty key"},
		// Refused before the index functions run.
		{"empty key before index functions", store.Op{Type: store.OpPut, Object: pod("", "", "panic=1")}, "empty key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPreparer(t, codec)
			good := store.Op{Type: store.OpPut, Object: pod("a", "good", "app=x")}
			ps, err := p.Prepare("commit", []store.Op{good, tc.op})
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Prepare error = %v; want ErrInvalid", err)
			}
			if ps != nil {
				t.Errorf("Prepare returned %d prepared ops with an error; want none", len(ps))
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "store: commit") || !strings.Contains(msg, tc.says) {
				t.Errorf("error %q: want it to start with the operation and say %q", msg, tc.says)
			}
		})
	}
}

// TestPrepareEmptyKey checks the errors for the empty key outside a small
// batch: a single op says no position, and a batch large enough to be
// encoded in parallel still names the op.
func TestPrepareEmptyKey(t *testing.T) {
	p := newPreparer(t, mustCodec(t, &corev1.Pod{}))
	_, err := p.PrepareOne("add", store.Op{Type: store.OpPut, Object: pod("", "")})
	if !errors.Is(err, store.ErrInvalid) || err.Error() != "store: add: put *v1.Pod: empty key: invalid argument" {
		t.Errorf("PrepareOne of an empty key = %v; want ErrInvalid saying \"store: add: put *v1.Pod: empty key\"", err)
	}
	ops := make([]store.Op, 300)
	for i := range ops {
		ops[i] = store.Op{Type: store.OpPut, Object: pod("ns", fmt.Sprintf("p%d", i))}
	}
	ops[200].Object = pod("", "")
	if _, err := p.Prepare("replace", ops); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "store: replace: op 200 of 300 (put *v1.Pod): empty key") {
		t.Errorf("Prepare of a large batch with an empty key = %v; want ErrInvalid naming op 200 of 300", err)
	}
}

func TestPrepare(t *testing.T) {
	codec := mustCodec(t, &corev1.Pod{})
	p := newPreparer(t, codec)
	a := pod("ns", "a", "app=web")
	ps, err := p.Prepare("commit", []store.Op{
		{Type: store.OpPut, Object: a},
		{Type: store.OpDelete, Key: "ns/gone"},
		{Type: store.OpDelete, Object: cache.DeletedFinalStateUnknown{Key: "ns/tomb", Obj: pod("ns", "tomb")}},
		{Type: store.OpPut, Key: "explicit", Object: pod("ns", "b")},
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := codec.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Type   store.OpType
		Key    string
		Values [][]string
		Data   bool
	}
	var gs []got
	for _, x := range ps {
		gs = append(gs, got{x.Type, x.Key, x.Values, x.Data != nil})
	}
	want := []got{
		{store.OpPut, "ns/a", [][]string{{"web"}, {"ns"}}, true},
		{store.OpDelete, "ns/gone", nil, false},
		{store.OpDelete, "ns/tomb", nil, false},
		{store.OpPut, "explicit", [][]string{{""}, {"ns"}}, true},
	}
	if diff := cmp.Diff(want, gs); diff != "" {
		t.Errorf("prepared (-want +got):\n%s", diff)
	}
	if !cmp.Equal(data, ps[0].Data) {
		t.Error("Data of a put is not the codec's encoding")
	}
	// Without a codec nothing is encoded.
	p.Codec = nil
	one, err := p.PrepareOne("add", store.Op{Type: store.OpPut, Object: a})
	if err != nil || one.Data != nil || one.Key != "ns/a" {
		t.Errorf("PrepareOne without codec = %+v, %v; want key ns/a and no data", one, err)
	}
}

func TestIndexSet(t *testing.T) {
	s := mustIndexSet(t, cache.Indexers{"b": failIndex, "a": indexer.NamespaceIndexFunc})
	if diff := cmp.Diff([]string{"a", "b"}, s.Names()); diff != "" {
		t.Errorf("Names are sorted (-want +got):\n%s", diff)
	}
	vals, err := s.Values("k", pod("ns", "x", "app=web"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"ns"}, {"web"}}, vals); diff != "" {
		t.Errorf("Values are aligned with Names (-want +got):\n%s", diff)
	}
	if i, ok := s.Position("b"); !ok || i != 1 {
		t.Errorf("Position(b) = %d, %v", i, ok)
	}
	if _, ok := s.Position("zzz"); ok || s.Indexers()["zzz"] != nil {
		t.Error("an unknown index has a position or a function")
	}
	_, err = s.Values("ns/x", pod("ns", "x", "panic=1"))
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `"b"`) || !strings.Contains(err.Error(), "ns/x") {
		t.Errorf("Values with a panicking function: %v; want ErrInvalid naming the index and key", err)
	}

	for _, tc := range []struct {
		name string
		ix   cache.Indexers
	}{
		{"empty name", cache.Indexers{"": indexer.NamespaceIndexFunc}},
		{"nil function", cache.Indexers{"x": nil}},
	} {
		if _, err := indexer.NewIndexSet(tc.ix); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("NewIndexSet with %s: %v; want ErrInvalid", tc.name, err)
		}
	}
}

func TestIndexSetWith(t *testing.T) {
	s := mustIndexSet(t, cache.Indexers{"a": failIndex, "b": failIndex})
	bigger, err := s.With(cache.Indexers{"c": failIndex})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, bigger.Names()); diff != "" {
		t.Errorf("With (-want +got):\n%s", diff)
	}
	_, err = s.With(cache.Indexers{"b": failIndex, "a": failIndex, "d": failIndex})
	if !errors.Is(err, store.ErrIndexExists) || !strings.Contains(err.Error(), `["a" "b"]`) {
		t.Errorf("With conflicting names: %v; want ErrIndexExists naming a and b", err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, s.Names()); diff != "" {
		t.Errorf("the original set changed (-want +got):\n%s", diff)
	}
	if _, err := s.With(cache.Indexers{"e": nil}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("With a nil function: %v; want ErrInvalid", err)
	}
}

// TestPrepareLargeBatch covers the parallel encoding of large batches: every
// put gets its codec's encoding, deletes get none, and the error reported
// is the first failing operation's, whichever worker found it.
func TestPrepareLargeBatch(t *testing.T) {
	codec := mustCodec(t, &corev1.Pod{})
	p := newPreparer(t, codec)
	const n = 1000
	ops := make([]store.Op, n)
	for i := range ops {
		if i%10 == 3 {
			ops[i] = store.Op{Type: store.OpDelete, Key: fmt.Sprintf("ns/gone-%d", i)}
			continue
		}
		ops[i] = store.Op{Type: store.OpPut, Object: pod("ns", fmt.Sprintf("p-%04d", i), "app=web")}
	}
	ps, err := p.Prepare("commit", ops)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ps {
		if ops[i].Type == store.OpDelete {
			if r.Data != nil {
				t.Fatalf("op %d: a delete got data", i)
			}
			continue
		}
		want, err := codec.Encode(ops[i].Object)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(want, r.Data) || r.Key != fmt.Sprintf("ns/p-%04d", i) {
			t.Fatalf("op %d: key %q, data not the codec's encoding of its object", i, r.Key)
		}
	}
	// Objects the codec cannot encode (a ConfigMap for a Pod codec) at
	// positions that land in different workers' chunks.
	for _, bad := range [][]int{{n - 1}, {n / 2, n - 1}, {7, n / 2, n - 2}} {
		ops := slices.Clone(ops)
		for _, i := range bad {
			ops[i] = store.Op{Type: store.OpPut, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("bad-%d", i)}}}
		}
		ps, err := p.Prepare("commit", ops)
		if !errors.Is(err, store.ErrInvalid) || ps != nil {
			t.Fatalf("bad at %v: Prepare = %d ops, %v; want no ops and ErrInvalid", bad, len(ps), err)
		}
		if want := fmt.Sprintf("ns/bad-%d:", bad[0]); !strings.Contains(err.Error(), want) {
			t.Errorf("bad at %v: error %q does not name the first bad object (%s)", bad, err, want)
		}
	}
}
