package deltafifo_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

var impls = []struct {
	name string
	new  func(deltafifo.Options) deltafifo.Queue
}{
	{"impl=FIFO", newFIFOQueue},
	{"impl=DeltaFIFO", newDeltaFIFOQueue},
}

func TestCloseDrainsThenErrClosed(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			q := impl.new(deltafifo.Options{KnownObjects: newKnown(cm("k", "1", "k1"))})
			must(t, q.Add(cm("a", "2", "a1")))
			must(t, q.Add(cm("b", "3", "b1")))
			q.Close()
			q.Close() // idempotent

			writes := map[string]func() error{
				"add":      func() error { return q.Add(cm("c", "4", "c1")) },
				"update":   func() error { return q.Update(cm("a", "4", "a2")) },
				"delete":   func() error { return q.Delete(cm("a", "4", "a2")) },
				"replace":  func() error { return q.Replace(nil, "4") },
				"resync":   func() error { return q.Resync() },
				"bookmark": func() error { return q.Bookmark("4") },
			}
			for op, write := range writes {
				err := write()
				if !errors.Is(err, deltafifo.ErrClosed) || !strings.HasPrefix(err.Error(), "deltafifo: "+op+": ") {
					t.Errorf("%s after Close: got %v, want a %q error wrapping ErrClosed", op, err, "deltafifo: "+op+": ")
				}
			}

			var got cache.Deltas
			for {
				err := q.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
					got = append(got, b.Deltas...)
					return nil
				})
				if errors.Is(err, deltafifo.ErrClosed) {
					break
				}
				must(t, err)
			}
			diff(t, "drained deltas", deltas(d(cache.Added, cm("a", "2", "a1")), d(cache.Added, cm("b", "3", "b1"))), got)
			err := q.Pop(t.Context(), func(context.Context, deltafifo.Batch) error { return nil })
			diff(t, "Pop after the drain is ErrClosed", true, errors.Is(err, deltafifo.ErrClosed))
		})
	}
}

// popBlocked starts a Pop on an empty q, waits until it blocks, runs act,
// and returns what Pop returned and the batch it handed out, if any.
func popBlocked(t *testing.T, ctx context.Context, q deltafifo.Queue, act func()) (deltafifo.Batch, error) {
	t.Helper()
	blocked := make(chan struct{})
	var once sync.Once
	restore := deltafifo.SetWaitHook(func() { once.Do(func() { close(blocked) }) })
	defer restore()

	type result struct {
		b   deltafifo.Batch
		err error
	}
	done := make(chan result)
	go func() {
		var r result
		r.err = q.Pop(ctx, func(_ context.Context, b deltafifo.Batch) error {
			r.b = b
			return nil
		})
		done <- r
	}()
	// A Pop that returns instead of waiting never reaches the hook: fail,
	// rather than wait for it forever.
	select {
	case <-blocked:
	case r := <-done:
		t.Fatalf("Pop on an empty queue returned without waiting: %v, %+v", r.err, r.b)
	}
	act()
	r := <-done
	return r.b, r.err
}

func TestBlockedPop(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			t.Run("wakes on Add", func(t *testing.T) {
				q := impl.new(deltafifo.Options{})
				b, err := popBlocked(t, t.Context(), q, func() { must(t, q.Add(cm("a", "1", "a1"))) })
				must(t, err)
				diff(t, "batch", deltafifo.Batch{Deltas: deltas(d(cache.Added, cm("a", "1", "a1"))), ResourceVersion: "1"}, b)
			})
			t.Run("returns ErrClosed on Close", func(t *testing.T) {
				q := impl.new(deltafifo.Options{})
				_, err := popBlocked(t, t.Context(), q, q.Close)
				diff(t, "errors.Is(err, ErrClosed)", true, errors.Is(err, deltafifo.ErrClosed))
			})
			t.Run("returns ctx.Err() when ctx is done, queue still usable", func(t *testing.T) {
				q := impl.new(deltafifo.Options{})
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				_, err := popBlocked(t, ctx, q, cancel)
				diff(t, "errors.Is(err, context.Canceled)", true, errors.Is(err, context.Canceled))
				must(t, q.Add(cm("a", "1", "a1")))
				diff(t, "next pop", deltafifo.Batch{Deltas: deltas(d(cache.Added, cm("a", "1", "a1"))), ResourceVersion: "1"}, pop(t, q))
			})
		})
	}
}

func TestPopWithDoneContextLeavesQueue(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			q := impl.new(deltafifo.Options{})
			must(t, q.Add(cm("a", "1", "a1")))
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			called := false
			err := q.Pop(ctx, func(context.Context, deltafifo.Batch) error {
				called = true
				return nil
			})
			diff(t, "errors.Is(err, context.Canceled)", true, errors.Is(err, context.Canceled))
			diff(t, "process called", false, called)
			diff(t, "Len", 1, queueLen(q))
		})
	}
}

func TestPopProcessErrorConsumesBatch(t *testing.T) {
	errApply := errors.New("apply failed")
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			q := impl.new(deltafifo.Options{})
			must(t, q.Add(cm("a", "1", "a1")))
			diff(t, "Len before the pop", 1, queueLen(q)) // else Pop would wait forever
			err := q.Pop(t.Context(), func(context.Context, deltafifo.Batch) error { return errApply })
			diff(t, "errors.Is(err, errApply)", true, errors.Is(err, errApply))
			diff(t, "Len", 0, queueLen(q))
		})
	}
}

var errBoom = errors.New("boom")

func TestBadInput(t *testing.T) {
	cases := []struct {
		name   string
		opts   deltafifo.Options
		prefix string
		want   error
		do     func(q deltafifo.Queue) error
	}{
		{"nil object", deltafifo.Options{}, "deltafifo: add: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Add(nil) }},
		{"typed nil pointer", deltafifo.Options{}, "deltafifo: update: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Update((*v1.ConfigMap)(nil)) }},
		{"object without metadata", deltafifo.Options{}, "deltafifo: delete: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Delete("not an object") }},
		{"empty key", deltafifo.Options{}, "deltafifo: add: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Add(&v1.ConfigMap{}) }},
		{"tombstone with empty key", deltafifo.Options{}, "deltafifo: delete: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Delete(cache.DeletedFinalStateUnknown{}) }},
		{"key function error", deltafifo.Options{KeyFunction: failOnX},
			"deltafifo: add: ", errBoom,
			func(q deltafifo.Queue) error { return q.Add(cm("x", "9", "x1")) }},
		{"key function panics", deltafifo.Options{KeyFunction: plainKey}, "deltafifo: add: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Add(cm("x", "9", "x1")) }},
		{"transformer error", deltafifo.Options{Transformer: func(interface{}) (interface{}, error) { return nil, errBoom }},
			"deltafifo: add: ", errBoom,
			func(q deltafifo.Queue) error { return q.Add(cm("x", "9", "x1")) }},
		{"transformer panics", deltafifo.Options{Transformer: func(obj interface{}) (interface{}, error) { panic("bad") }},
			"deltafifo: update: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Update(cm("x", "9", "x1")) }},
		{"transformer returns nil", deltafifo.Options{Transformer: func(interface{}) (interface{}, error) { return nil, nil }},
			"deltafifo: add: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Add(cm("x", "9", "x1")) }},
		{"one bad item in a relist", deltafifo.Options{}, "deltafifo: replace: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Replace([]interface{}{cm("x", "9", "x1"), nil}, "10") }},
		{"transformer error in a relist", deltafifo.Options{Transformer: func(obj interface{}) (interface{}, error) {
			if obj.(*v1.ConfigMap).Name == "y" {
				return nil, errBoom
			}
			return obj, nil
		}}, "deltafifo: replace: ", errBoom,
			func(q deltafifo.Queue) error {
				return q.Replace([]interface{}{cm("x", "9", "x1"), cm("y", "9", "y1")}, "10")
			}},
		{"known object lookup fails in a relist", deltafifo.Options{}, "deltafifo: replace: ", errLookup,
			func(q deltafifo.Queue) error { return q.Replace([]interface{}{cm("x", "9", "x1")}, "10") }},
		{"known object lookup fails in a resync", deltafifo.Options{}, "deltafifo: resync: ", errLookup,
			func(q deltafifo.Queue) error { return q.Resync() }},
		{"empty bookmark", deltafifo.Options{}, "deltafifo: bookmark: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Bookmark("") }},
		{"nil PopFunc", deltafifo.Options{}, "deltafifo: pop: ", deltafifo.ErrInvalid,
			func(q deltafifo.Queue) error { return q.Pop(context.Background(), nil) }},
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					opts := tc.opts
					k := newKnown(cm("k", "1", "k1"))
					k.errOn = "ns/k"
					opts.KnownObjects = k
					q := impl.new(opts)
					// The baseline goes in without the options under test in
					// the way: a plain struct for the panicking key function.
					base := interface{}(cm("a", "2", "a1"))
					if tc.name == "key function panics" {
						base = plain{"a", 1}
					}
					if tc.opts.Transformer == nil || tc.name == "transformer error in a relist" {
						must(t, q.Add(base))
					}
					before := queueLen(q)

					err := tc.do(q)
					if !errors.Is(err, tc.want) {
						t.Fatalf("got error %v, want one wrapping %v", err, tc.want)
					}
					if !strings.HasPrefix(err.Error(), tc.prefix) {
						t.Errorf("error %q does not start with %q", err, tc.prefix)
					}
					diff(t, "Len after the bad call", before, queueLen(q))
					var got int
					for _, b := range drain(t, q) {
						got += len(b.Deltas)
					}
					diff(t, "deltas drained", before, got)
				})
			}
		})
	}
}

// failOnX is a key function that fails for objects named x.
func failOnX(obj interface{}) (string, error) {
	if obj.(*v1.ConfigMap).Name == "x" {
		return "", errBoom
	}
	return cache.MetaNamespaceKeyFunc(obj)
}

func TestKeyOfAndIsClosed(t *testing.T) {
	type keyer interface {
		KeyOf(obj interface{}) (string, error)
		IsClosed() bool
	}
	cases := []struct {
		name    string
		obj     interface{}
		want    string
		wantErr error
	}{
		{"object", cm("a", "1", "a1"), "ns/a", nil},
		{"tombstone", tomb("x", nil), "ns/x", nil},
		{"deltas", cache.Deltas{d(cache.Added, cm("b", "1", "b1"))}, "ns/b", nil},
		{"empty deltas", cache.Deltas{}, "", deltafifo.ErrInvalid},
		{"nil", nil, "", deltafifo.ErrInvalid},
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			q := impl.new(deltafifo.Options{})
			k := q.(keyer)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					key, err := k.KeyOf(tc.obj)
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("KeyOf: got error %v, want %v", err, tc.wantErr)
					}
					if err != nil && !strings.HasPrefix(err.Error(), "deltafifo: key: ") {
						t.Errorf("error %q does not name the operation", err)
					}
					diff(t, "key", tc.want, key)
				})
			}
			diff(t, "IsClosed before Close", false, k.IsClosed())
			q.Close()
			diff(t, "IsClosed after Close", true, k.IsClosed())
		})
	}
}

func TestDeltaFIFOGetRejectsBadObject(t *testing.T) {
	q := deltafifo.NewDeltaFIFO(nil)
	_, exists, err := q.Get(nil)
	if !errors.Is(err, deltafifo.ErrInvalid) || !strings.HasPrefix(err.Error(), "deltafifo: get: ") {
		t.Errorf("Get(nil): got %v, want a \"deltafifo: get: \" error wrapping ErrInvalid", err)
	}
	diff(t, "exists", false, exists)
}

// metaOnly exposes its metadata only through GetObjectMeta, as some
// wrapper types do.
type metaOnly struct{ meta metav1.ObjectMeta }

func (m metaOnly) GetObjectMeta() metav1.Object { return &m.meta }

func TestResourceVersionThroughObjectMetaAccessor(t *testing.T) {
	obj := metaOnly{metav1.ObjectMeta{Namespace: "ns", Name: "m", ResourceVersion: "42"}}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			q := impl.new(deltafifo.Options{})
			must(t, q.Add(obj))
			diff(t, "resume point", "42", pop(t, q).ResourceVersion)
		})
	}
}

// TestHandedOut checks Arrived and Batch.HandedOut, with which a consumer
// tells when an event it saw queued (a bookmark) has reached it: the count
// never runs ahead of what was handed out, never goes back, and reaches
// Arrived once the queue is drained.
func TestHandedOut(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			q := impl.new(deltafifo.Options{MaxBatch: 1})
			must(t, q.Add(cm("a", "1", "a1")))
			must(t, q.Add(cm("b", "2", "b1")))
			must(t, q.Update(cm("a", "3", "a2")))
			must(t, q.Bookmark("4"))
			if got := q.Arrived(); got != 4 {
				t.Fatalf("Arrived after four events = %d, want 4", got)
			}
			var seen []string // events handed out so far, as "key@rv"
			var last uint64
			for q.Arrived() > last {
				b := pop(t, q)
				for _, d := range b.Deltas {
					seen = append(seen, string(d.Type)+"@"+rvOf(d.Object))
				}
				if b.HandedOut < last || b.HandedOut > q.Arrived() {
					t.Fatalf("HandedOut %d after %d, with %d arrived", b.HandedOut, last, q.Arrived())
				}
				// Events are counted in arrival order: the first HandedOut
				// of them must all be out.
				arrival := []string{"Added@1", "Added@2", "Updated@3", "Bookmark@4"}
				for _, e := range arrival[:b.HandedOut] {
					// DeltaFIFO does not hold the count back for a queued
					// bookmark, which has nothing to apply.
					queuedBookmark := impl.name == "impl=DeltaFIFO" && strings.HasPrefix(e, "Bookmark")
					if !queuedBookmark && !slices.Contains(seen, e) {
						t.Fatalf("HandedOut %d, but %s is not handed out yet (handed out: %v)", b.HandedOut, e, seen)
					}
				}
				last = b.HandedOut
			}
		})
	}
}

// rvOf returns the resourceVersion an event's delta object carries.
func rvOf(obj interface{}) string {
	if bm, ok := obj.(cache.BookmarkInfo); ok {
		return bm.ResourceVersion
	}
	return obj.(*v1.ConfigMap).ResourceVersion
}
